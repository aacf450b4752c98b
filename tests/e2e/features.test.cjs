// Prompt logprobs, echo, prefix-cache usage, chat templates from
// --chat-template (tools, chat_template_kwargs), CLI flag handling, HTTP
// details (100-continue, 405) and graceful SIGTERM.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startServer, requireOpenAI, metrics, BIN, MODEL } = require('./harness.cjs');

const OpenAI = requireOpenAI();
const TEMPLATE = '{% for m in messages %}{{ m.role }}:{{ m.content }}\n{% endfor %}' +
  '{% if tools %}TOOLS{{ tools | tojson }}\n{% endif %}{% if flag is defined %}FLAG={{ flag }}\n{% endif %}' +
  '{% if add_generation_prompt %}A:{% endif %}';
let server;
let client;
let dir;

test.before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-e2e-'));
  fs.writeFileSync(path.join(dir, 'template.jinja'), TEMPLATE);
  server = await startServer(['--chat-template', path.join(dir, 'template.jinja'), '--max-model-len', '1024',
    '--swap-space', '4', '--trust-remote-code', '--generation-config', 'vllm']);
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});

test.after(async () => {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function post(p, body) {
  const r = await fetch(`${server.baseURL}${p}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

test('ignored vLLM flags warn in one line each', () => {
  assert.match(server.log(), /--swap-space has no effect/);
  assert.match(server.log(), /--trust-remote-code has no effect/);
});

test('unknown flags fail with a suggestion', () => {
  const r = spawnSync(BIN, ['serve', MODEL, '--max-num-seq', '4'], { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown flag --max-num-seq.*did you mean --max-num-seqs\?/);
  const bad = spawnSync(BIN, ['serve', MODEL, '--kv-transfer-config', '{not json'], { encoding: 'utf8', timeout: 30000 });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /--kv-transfer-config expects a JSON object/);
  // Agent flags are checked before the model loads.
  for (const [args, message] of [
    [['--tool-call-parser', 'hermez'], /unknown tool call parser 'hermez'; known: hermes/],
    [['--enable-auto-tool-choice'], /--enable-auto-tool-choice requires --tool-call-parser/],
    [['--reasoning-parser', 'r2'], /r2/],
    [['--structured-outputs-config', '{"enable_in_reasoning": "yes"}'], /enable_in_reasoning/],
  ]) {
    const r2 = spawnSync(BIN, ['serve', MODEL, ...args], { encoding: 'utf8', timeout: 30000 });
    assert.equal(r2.status, 2, r2.stderr);
    assert.match(r2.stderr, message);
    assert.doesNotMatch(r2.stderr, /loaded \d+ parameters/);
  }
});

test('echo with logprobs covers prompt and completion tokens', async () => {
  const r = await client.completions.create({ prompt: 'echo logprobs', max_tokens: 3, echo: true, logprobs: 1, temperature: 0 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.prompt_tokens + 3);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x) => typeof x === 'number' && x <= 0));
  assert.ok(r.choices[0].text.startsWith('echo logprobs'));
});

test('prompt_logprobs (non-streamed) and its streaming error', async () => {
  const { status, body } = await post('/v1/completions', { prompt: 'prompt logprobs here', max_tokens: 1, prompt_logprobs: 2 });
  assert.equal(status, 200);
  const pl = body.choices[0].prompt_logprobs;
  assert.equal(pl.length, body.usage.prompt_tokens);
  assert.equal(pl[0], null);
  for (const pos of pl.slice(1)) {
    const entries = Object.values(pos);
    assert.ok(entries.length >= 1 && entries.length <= 3);
    for (const e of entries) assert.ok(e.logprob <= 0 && e.rank >= 1 && typeof e.decoded_token === 'string');
  }
  const s = await post('/v1/completions', { prompt: 'x', prompt_logprobs: 1, stream: true });
  assert.equal(s.status, 400);
});

test('a repeated prompt reports cached tokens from the prefix cache', async () => {
  const prompt = Array.from({ length: 70 }, (_, i) => 20 + (i % 60));
  const first = await client.completions.create({ prompt, max_tokens: 2, temperature: 0 });
  const before = await metrics(server.baseURL);
  const second = await client.completions.create({ prompt, max_tokens: 2, temperature: 0 });
  assert.equal(first.usage.prompt_tokens, 70);
  assert.ok(second.usage.prompt_tokens_details.cached_tokens >= 64, JSON.stringify(second.usage));
  const after = await metrics(server.baseURL);
  assert.ok(after['vllm:prefix_cache_hits_total{}'] - before['vllm:prefix_cache_hits_total{}'] >= 64);
  assert.equal(second.choices[0].text, first.choices[0].text);
});

test('--chat-template renders tools (key order kept) and chat_template_kwargs', async () => {
  const tools = [{ type: 'function', function: { name: 'f', parameters: { z: 1, a: 2 } } }];
  const tok = await post('/tokenize', { messages: [{ role: 'user', content: 'hi' }], tools, chat_template_kwargs: { flag: 'yes' } });
  assert.equal(tok.status, 200);
  const text = (await post('/detokenize', { tokens: tok.body.tokens })).body.prompt;
  assert.equal(text, 'user:hi\nTOOLS[{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}]\nFLAG=yes\nA:');
  // tool_choice "none": the tools are shown to the model, its output is not
  // parsed. Without it, tools mean "auto", which (as in vLLM) needs
  // --enable-auto-tool-choice and a --tool-call-parser.
  const r = await client.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], tools, tool_choice: 'none',
    max_tokens: 2, temperature: 0, chat_template_kwargs: { flag: 'yes' } });
  assert.equal(r.usage.prompt_tokens, tok.body.count);
  const auto = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], tools, max_tokens: 2 });
  assert.equal(auto.status, 400);
  assert.match(auto.body.error.message, /--enable-auto-tool-choice/);
  const cont = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'partial' }],
    add_generation_prompt: false, continue_final_message: true, max_tokens: 1 });
  assert.equal(cont.status, 200);
});

test('curl with Expect: 100-continue is answered at once; wrong method is 405', async () => {
  // Unknown fields are ignored (the padding stands for a large prompt).
  const body = JSON.stringify({ prompt: 'x', max_tokens: 1, padding: 'y'.repeat(3000) });
  const started = Date.now();
  const out = await new Promise((resolve, reject) => execFile('curl', ['-s', '-H', 'content-type: application/json', '-H', 'Expect: 100-continue',
    '--data-binary', body, `${server.baseURL}/v1/completions`], (err, o) => (err ? reject(err) : resolve(o))));
  assert.ok(Date.now() - started < 900, `took ${Date.now() - started} ms`);
  assert.equal(JSON.parse(out).choices.length, 1, out);
  assert.equal((await fetch(`${server.baseURL}/v1/completions`)).status, 405);
});

test('SIGTERM lets an in-flight stream finish, then exits 0', async () => {
  const s = await startServer();
  const c = new OpenAI({ baseURL: `${s.baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  const stream = await c.completions.create({ prompt: 'graceful', max_tokens: 300, ignore_eos: true, temperature: 0, stream: true });
  let text = '';
  let finish = null;
  let signalled = false;
  let stopped;
  for await (const chunk of stream) {
    if (!signalled) { signalled = true; stopped = s.stop(); }
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason || finish;
  }
  assert.equal(finish, 'length');
  const r = await stopped;
  assert.equal(r.code, 0, s.log());
  assert.match(s.log(), /signal 15: stopping/);
  await assert.rejects(fetch(`${s.baseURL}/health`));
});

test('truncate_prompt_tokens keeps the prompt tail; unsupported features are 400', async () => {
  const prompt = Array.from({ length: 100 }, (_, i) => 20 + (i % 60));
  const r = await post('/v1/completions', { prompt, max_tokens: 1, truncate_prompt_tokens: 10 });
  assert.equal(r.status, 200);
  assert.equal(r.body.usage.prompt_tokens, 10);
  const beam = await post('/v1/completions', { prompt: 'x', max_tokens: 1, use_beam_search: true });
  assert.equal(beam.status, 400);
  assert.match(beam.body.error.message, /not supported/);
  const tag = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }],
    response_format: { type: 'structural_tag' } });
  assert.equal(tag.status, 400);
  assert.match(tag.body.error.message, /structural_tag/);
});
