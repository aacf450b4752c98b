// OpenAI SDK (npm openai@6) against `strata serve`: models, completions,
// chat, streaming shapes, determinism, stop strings, n, logprobs, tokenizer
// endpoints and metrics.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, requireOpenAI, metrics } = require('./harness.cjs');

const OpenAI = requireOpenAI();
let server;
let client;

test.before(async () => {
  server = await startServer(['--served-model-name', 'tiny', 'tiny-alias', '--max-model-len', '512']);
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});

test.after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `server exit: ${JSON.stringify(r)}\n${server.log()}`);
});

// ignore_eos keeps lengths model-independent (the bundled model may end early).
const greedy = { temperature: 0, ignore_eos: true };

async function collectChat(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

test('models.list reports every alias with root and max_model_len', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.deepEqual(models.map((m) => m.id), ['tiny', 'tiny-alias']);
  for (const m of models) {
    assert.equal(m.object, 'model');
    assert.equal(m.max_model_len, 512);
    assert.equal(m.owned_by, 'vllm');
    assert.ok(m.root.length > 0);
    assert.equal(typeof m.created, 'number');
  }
});

test('completion from a string: length finish, usage, model name', async () => {
  const r = await client.completions.create({ model: 'tiny-alias', prompt: 'hello world', max_tokens: 7, ...greedy });
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.object, 'text_completion');
  assert.equal(r.model, 'tiny');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 7);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 7);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
});

test('completion batch, token ids and lists of token ids', async () => {
  const batch = await client.completions.create({ model: 'tiny', prompt: ['one', 'two three'], max_tokens: 3, ...greedy });
  assert.deepEqual(batch.choices.map((c) => c.index), [0, 1]);
  const ids = await client.completions.create({ model: 'tiny', prompt: [10, 20, 30, 40], max_tokens: 3, ...greedy });
  assert.equal(ids.usage.prompt_tokens, 4);
  const lists = await client.completions.create({ model: 'tiny', prompt: [[10, 20], [30, 40, 50]], max_tokens: 3, ...greedy });
  assert.equal(lists.choices.length, 2);
  assert.equal(lists.usage.prompt_tokens, 5);
  assert.equal(lists.usage.completion_tokens, 6);
});

test('echo prepends the prompt; logprobs give top-N per token', async () => {
  const plain = await client.completions.create({ model: 'tiny', prompt: 'echo me', max_tokens: 4, ...greedy });
  const echo = await client.completions.create({ model: 'tiny', prompt: 'echo me', max_tokens: 4, echo: true, ...greedy });
  assert.equal(echo.choices[0].text, 'echo me' + plain.choices[0].text);
  const lp = await client.completions.create({ model: 'tiny', prompt: 'echo me', max_tokens: 4, logprobs: 2, ...greedy });
  const l = lp.choices[0].logprobs;
  assert.equal(l.tokens.length, 4);
  assert.equal(l.token_logprobs.length, 4);
  assert.equal(l.text_offset[0], 0);
  for (let i = 0; i < 4; i++) {
    assert.ok(l.token_logprobs[i] <= 0);
    assert.equal(Object.keys(l.top_logprobs[i]).length <= 2, true);
    // Greedy: the chosen token is the most likely one.
    assert.ok(Math.abs(Math.max(...Object.values(l.top_logprobs[i])) - l.token_logprobs[i]) < 1e-4);
  }
});

test('chat non-streaming with logprobs', async () => {
  const r = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, logprobs: true, top_logprobs: 3, ...greedy });
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.equal(r.choices[0].finish_reason, 'length');
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 5);
  assert.equal(content[0].top_logprobs.length, 3);
  assert.ok(Array.isArray(content[0].bytes));
});

test('chat streaming: role chunk first, finish chunk, no usage unless asked, [DONE]', async () => {
  const params = { model: 'tiny', messages: [{ role: 'user', content: 'stream please' }], max_tokens: 6, ...greedy };
  const chunks = await collectChat(params);
  assert.ok(chunks.length >= 2);
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.id, chunks[0].id);
    assert.equal(c.usage, undefined);
    assert.equal(c.choices.length, 1);
  }
  for (const c of chunks.slice(1)) assert.equal(c.choices[0].delta.role, undefined);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  assert.equal(chunks.filter((c) => c.choices[0].finish_reason).length, 1);

  const withUsage = await collectChat({ ...params, stream_options: { include_usage: true } });
  const last = withUsage.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 6);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 6);

  // The SDK's own stream checker (missing role / finish_reason throws).
  const final = await client.chat.completions.stream(params).finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, 'length');
});

test('greedy is deterministic and streaming equals non-streaming', async () => {
  const params = { model: 'tiny', messages: [{ role: 'user', content: 'determinism' }], max_tokens: 12, ...greedy };
  const a = await client.chat.completions.create(params);
  const b = await client.chat.completions.create(params);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  const chunks = await collectChat(params);
  const streamed = chunks.map((c) => c.choices[0].delta.content || '').join('');
  assert.equal(streamed, a.choices[0].message.content);

  const cp = { model: 'tiny', prompt: 'determinism', max_tokens: 12, ...greedy };
  const c1 = await client.completions.create(cp);
  let text = '';
  for await (const c of await client.completions.create({ ...cp, stream: true })) text += c.choices[0]?.text ?? '';
  assert.equal(text, c1.choices[0].text);
});

test('stop strings cut the text, are never streamed, and report stop_reason', async () => {
  const prompt = 'a stop string test';
  const full = (await client.completions.create({ model: 'tiny', prompt, max_tokens: 24, ...greedy })).choices[0].text;
  assert.ok(full.length >= 8, `need some text, got ${JSON.stringify(full)}`);
  const stop = full.slice(4, 7);
  const expected = full.slice(0, full.indexOf(stop));
  const r = await client.completions.create({ model: 'tiny', prompt, max_tokens: 24, stop: [stop], ...greedy });
  assert.equal(r.choices[0].text, expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].stop_reason, stop);
  const pieces = [];
  let finish = null;
  for await (const c of await client.completions.create({ model: 'tiny', prompt, max_tokens: 24, stop, stream: true, ...greedy })) {
    if (c.choices.length) { pieces.push(c.choices[0].text); finish = c.choices[0].finish_reason || finish; }
  }
  assert.equal(pieces.join(''), expected);
  assert.equal(finish, 'stop');
  const inc = await client.completions.create({ model: 'tiny', prompt, max_tokens: 24, stop, include_stop_str_in_output: true, ...greedy });
  assert.equal(inc.choices[0].text, expected + stop);
});

test('n=2 gives two choices; greedy choices agree, seeded ones reproduce', async () => {
  const g = await client.completions.create({ model: 'tiny', prompt: 'fan out', max_tokens: 5, n: 2, ...greedy });
  assert.deepEqual(g.choices.map((c) => c.index), [0, 1]);
  assert.equal(g.choices[0].text, g.choices[1].text);
  assert.equal(g.usage.completion_tokens, 10);
  const s = { model: 'tiny', prompt: 'fan out', max_tokens: 8, n: 2, temperature: 1, seed: 7 };
  const s1 = await client.completions.create(s);
  const s2 = await client.completions.create(s);
  assert.deepEqual(s1.choices.map((c) => c.text), s2.choices.map((c) => c.text));
  const chunks = await collectChat({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], max_tokens: 3, n: 2, ...greedy });
  for (const idx of [0, 1]) {
    const mine = chunks.filter((c) => c.choices[0].index === idx);
    assert.equal(mine[0].choices[0].delta.role, 'assistant');
    assert.equal(mine.filter((c) => c.choices[0].finish_reason).length, 1);
  }
});

test('/tokenize and /detokenize round trip (prompt and chat forms)', async () => {
  const t = await (await fetch(`${server.baseURL}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: 'round trip', add_special_tokens: false }) })).json();
  assert.equal(t.count, t.tokens.length);
  assert.equal(t.max_model_len, 512);
  const d = await (await fetch(`${server.baseURL}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: t.tokens }) })).json();
  assert.equal(d.prompt, 'round trip');
  const chat = await (await fetch(`${server.baseURL}/tokenize`, { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) })).json();
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
  assert.equal(chat.count, r.usage.prompt_tokens);
});

test('/metrics parses and counters move', async () => {
  const before = await metrics(server.baseURL);
  for (const name of ['vllm:num_requests_running{}', 'vllm:num_requests_waiting{}', 'vllm:kv_cache_usage_perc{}',
    'vllm:prefix_cache_queries_total{}', 'vllm:prefix_cache_hits_total{}', 'vllm:prompt_tokens_total{}',
    'vllm:generation_tokens_total{}', 'vllm:num_preemptions_total{}', 'vllm:request_success_total{finished_reason=length}',
    'vllm:time_to_first_token_seconds_count{}', 'vllm:inter_token_latency_seconds_count{}',
    'vllm:request_queue_time_seconds_count{}', 'vllm:e2e_request_latency_seconds_count{}', 'vllm:e2e_request_latency_seconds_bucket{le=+Inf}']) {
    assert.ok(name in before || name.replace(/=([^,}]+)/g, '=$1') in before, `missing ${name}: ${Object.keys(before).join(' ')}`);
  }
  await client.completions.create({ model: 'tiny', prompt: 'count me', max_tokens: 4, ...greedy });
  const after = await metrics(server.baseURL);
  assert.equal(after['vllm:generation_tokens_total{}'] - before['vllm:generation_tokens_total{}'], 4);
  assert.ok(after['vllm:prompt_tokens_total{}'] > before['vllm:prompt_tokens_total{}']);
  assert.equal(after['vllm:request_success_total{finished_reason=length}'] - before['vllm:request_success_total{finished_reason=length}'], 1);
  assert.equal(after['vllm:time_to_first_token_seconds_count{}'] - before['vllm:time_to_first_token_seconds_count{}'], 1);
  assert.equal(after['vllm:request_queue_time_seconds_count{}'] - before['vllm:request_queue_time_seconds_count{}'], 1);
  const reset = await fetch(`${server.baseURL}/reset_prefix_cache`, { method: 'POST' });
  assert.equal(reset.status, 200);
  const v = await (await fetch(`${server.baseURL}/version`)).json();
  assert.equal(typeof v.version, 'string');
});
