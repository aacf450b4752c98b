// Errors, authentication, limits, client disconnects, raw SSE framing (curl)
// and a bounded concurrency test against `strata serve`.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const { startServer, requireOpenAI, metrics, sleep } = require('./harness.cjs');

const OpenAI = requireOpenAI();
let server;
let client;

test.before(async () => {
  server = await startServer(['--max-model-len', '4096', '--max-request-body', '64KiB']);
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});

test.after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `server exit: ${JSON.stringify(r)}\n${server.log()}`);
});

function assertEnvelope(body, status) {
  assert.equal(typeof body.error.message, 'string');
  assert.equal(typeof body.error.type, 'string');
  assert.ok('param' in body.error);
  assert.equal(body.error.code, status);
}

async function post(path, body, headers = {}) {
  const r = await fetch(`${server.baseURL}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: r.status, body: await r.json() };
}

async function waitFor(fn, what, ms = 10000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

test('malformed JSON and wrong types answer 400 envelopes', async () => {
  const bad = await post('/v1/completions', '{"prompt": "x",');
  assert.equal(bad.status, 400);
  assertEnvelope(bad.body, 400);
  assert.match(bad.body.error.message, /Invalid JSON body: .*column/);
  const wrong = await post('/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }));
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.error.param, 'temperature');
  const range = await post('/v1/completions', JSON.stringify({ prompt: 'x', top_p: 5 }));
  assert.equal(range.status, 400);
  const oob = await post('/v1/completions', JSON.stringify({ prompt: [999999], max_tokens: 1 }));
  assert.equal(oob.status, 400);
});

test('too-long prompt and too-large max_tokens are 400 with both numbers', async () => {
  const long = Array.from({ length: 4200 }, (_, i) => 10 + (i % 50));
  await assert.rejects(client.completions.create({ prompt: long, max_tokens: 1 }), (e) => {
    assert.equal(e.status, 400);
    assert.match(e.message, /maximum context length is 4096 tokens\. However, your request has 4200 input tokens/);
    return true;
  });
  await assert.rejects(client.completions.create({ prompt: [10, 11, 12], max_tokens: 5000 }), (e) => {
    assert.equal(e.status, 400);
    assert.match(e.message, /too large: 5000.*4096 - 3/);
    return true;
  });
});

test('unknown model is 404; unknown route is 404; the server keeps serving', async () => {
  await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x', max_tokens: 1 }), (e) => {
    assert.equal(e.status, 404);
    assert.match(e.message, /The model `nope` does not exist/);
    return true;
  });
  const r = await fetch(`${server.baseURL}/v1/nothing`);
  assert.equal(r.status, 404);
  const ok = await client.completions.create({ prompt: 'still alive', max_tokens: 2, temperature: 0 });
  assert.equal(ok.choices.length, 1);
});

test('oversized body is 413', async () => {
  const r = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'x'.repeat(100000) }) });
  assert.equal(r.status, 413);
  assertEnvelope(await r.json(), 413);
});

// Sends raw bytes on a fresh connection and returns everything the server
// answers before it closes the connection.
function rawExchange(bytes) {
  const net = require('node:net');
  const url = new URL(server.baseURL);
  return new Promise((resolve, reject) => {
    const chunks = [];
    const sock = net.connect(Number(url.port), url.hostname, () => sock.write(Buffer.from(bytes, 'latin1')));
    sock.on('data', (d) => chunks.push(d));
    sock.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    sock.on('error', reject);
    sock.setTimeout(10000, () => reject(new Error('no answer within 10 s')));
  });
}

function parseRaw(raw) {
  const [head, body] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
  return { status: Number(head.split(' ')[1]), body: JSON.parse(Buffer.from(body, 'latin1').toString('utf8')) };
}

// Found by the soak test: these used to close the connection without an answer.
test('malformed HTTP framing gets a 400 (431 for a huge header) envelope, then the server keeps serving', async () => {
  const cases = [
    ['POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}', 400],
    ['POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400],
    ['POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400],
    ['\x00\x01\x02 NOT HTTP AT ALL\r\n\r\n', 400],
    ['GET /health HTTP/9.9\r\nHost: x\r\n\r\n', 400],
    [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70000)}\r\n\r\n`, 431],
  ];
  for (const [bytes, status] of cases) {
    const r = parseRaw(await rawExchange(bytes));
    assert.equal(r.status, status, JSON.stringify(bytes.slice(0, 60)));
    assertEnvelope(r.body, status);
  }
  assert.equal((await fetch(`${server.baseURL}/health`)).status, 200);
});

test('error messages that echo invalid UTF-8 are still valid JSON', async () => {
  const body = Buffer.concat([Buffer.from('{"prompt": "'), Buffer.from([0xff, 0xfe, 0xfd]), Buffer.from('"')]);
  const r = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 400);
  assertEnvelope(await r.json(), 400);
  const raw = parseRaw(await rawExchange('GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
  assert.equal(raw.status, 404);
  assertEnvelope(raw.body, 404);
  assert.ok(raw.body.error.message.includes('\ufffd'), raw.body.error.message);
});

test('client abort mid-stream frees the request and its KV blocks', async () => {
  const before = await metrics(server.baseURL);
  const stream = await client.completions.create({ prompt: 'long generation', max_tokens: 4000, ignore_eos: true, temperature: 0, stream: true });
  let n = 0;
  for await (const _ of stream) { if (++n === 2) break; }  // break aborts the HTTP request
  const after = await waitFor(async () => {
    const m = await metrics(server.baseURL);
    return m['vllm:num_requests_running{}'] === 0 && m['vllm:kv_cache_usage_perc{}'] === 0 &&
      m['vllm:request_success_total{finished_reason=abort}'] > before['vllm:request_success_total{finished_reason=abort}'] ? m : null;
  }, 'abort to free the request');
  assert.ok(after['vllm:generation_tokens_total{}'] - before['vllm:generation_tokens_total{}'] < 4000);
  const ok = await client.chat.completions.create({ messages: [{ role: 'user', content: 'next' }], max_tokens: 3 });
  assert.equal(ok.choices[0].finish_reason, 'length');
});

test('raw SSE framing seen by curl', async () => {
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'curl' }], max_tokens: 4, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  const raw = await new Promise((resolve, reject) => execFile('curl', ['-sN', '-H', 'content-type: application/json',
    '-d', body, `${server.baseURL}/v1/chat/completions`], (err, out) => (err ? reject(err) : resolve(out))));
  assert.ok(raw.endsWith('data: [DONE]\n\n'), JSON.stringify(raw.slice(-40)));
  const events = raw.split('\n\n').filter((e) => e.length);
  for (const e of events) {
    assert.ok(e.startsWith('data: '), `event ${JSON.stringify(e)}`);
    assert.equal(e.includes('\n'), false);
  }
  const json = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
  assert.deepEqual(json[0].choices[0].delta, { role: 'assistant', content: '' });
  assert.deepEqual(json.at(-1).choices, []);
  assert.equal(json.at(-1).usage.completion_tokens, 4);
  assert.equal(json.at(-2).choices[0].finish_reason, 'length');
  // Non-streamed reply headers.
  const head = await fetch(`${server.baseURL}/v1/models`);
  assert.match(head.headers.get('content-type'), /application\/json/);
});

test('256 concurrent streaming clients all complete with the right text', async (t) => {
  const prompts = ['alpha', 'beta', 'gamma', 'delta'];
  const expected = {};
  for (const p of prompts) {
    expected[p] = (await client.completions.create({ prompt: p, max_tokens: 6, temperature: 0, ignore_eos: true })).choices[0].text;
  }
  const rss = () => Number(fs.readFileSync(`/proc/${server.proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
  const rssBefore = rss();
  const one = async (i) => {
    const p = prompts[i % prompts.length];
    let text = '';
    let finish = null;
    for await (const c of await client.completions.create({ prompt: p, max_tokens: 6, temperature: 0, ignore_eos: true, stream: true })) {
      if (c.choices.length) { text += c.choices[0].text; finish = c.choices[0].finish_reason || finish; }
    }
    assert.equal(text, expected[p]);
    assert.equal(finish, 'length');
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: 256 }, (_, i) => one(i)));
  const seconds = (Date.now() - started) / 1000;
  t.diagnostic(`256 streams in ${seconds.toFixed(2)} s (${(256 / seconds).toFixed(1)} req/s)`);
  const grownKiB = rss() - rssBefore;
  assert.ok(grownKiB < 200 * 1024, `RSS grew by ${grownKiB} KiB`);
  const m = await metrics(server.baseURL);
  assert.equal(m['vllm:num_requests_running{}'], 0);
});

test('API key: 401 without or with a wrong key on /v1, open health/metrics; 503 over the pending limit', async () => {
  const guarded = await startServer(['--api-key', 'sekret', '--max-pending-requests', '1']);
  try {
    const wrong = new OpenAI({ baseURL: `${guarded.baseURL}/v1`, apiKey: 'nope', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e.status === 401);
    const none = await fetch(`${guarded.baseURL}/v1/models`);
    assert.equal(none.status, 401);
    assert.equal((await fetch(`${guarded.baseURL}/health`)).status, 200);
    assert.equal((await fetch(`${guarded.baseURL}/metrics`)).status, 200);
    const right = new OpenAI({ baseURL: `${guarded.baseURL}/v1`, apiKey: 'sekret', maxRetries: 0 });
    const r = await right.completions.create({ prompt: 'x', max_tokens: 2 });
    assert.equal(r.choices.length, 1);
    // One long request holds the only slot; a second one is refused with 503.
    const stream = await right.completions.create({ prompt: 'busy', max_tokens: 2000, ignore_eos: true, stream: true });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    await assert.rejects(right.completions.create({ prompt: 'y', max_tokens: 2 }), (e) => e.status === 503);
    await it.return();
  } finally {
    const r = await guarded.stop();
    assert.equal(r.code, 0, guarded.log());
  }
});

test('VLLM_API_KEY from the environment is honoured', async () => {
  const guarded = await startServer([], { VLLM_API_KEY: 'envkey' });
  try {
    assert.equal((await fetch(`${guarded.baseURL}/v1/models`)).status, 401);
    const ok = await fetch(`${guarded.baseURL}/v1/models`, { headers: { authorization: 'Bearer envkey' } });
    assert.equal(ok.status, 200);
  } finally {
    await guarded.stop();
  }
});
