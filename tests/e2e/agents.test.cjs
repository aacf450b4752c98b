// The agent-facing API of `strata serve` driven the way a vLLM user's agent
// code drives it: structured outputs (response_format, vLLM's
// structured_outputs and legacy guided_*), tool calling (required, named,
// auto with the hermes parser, streamed deltas, history replay) and reasoning
// (--reasoning-parser qwen3), through the official OpenAI SDK, LangChain.js
// (@langchain/openai ChatOpenAI) and the Vercel AI SDK
// (@ai-sdk/openai-compatible).
//
// The model has random weights, so correctness comes from the constraints:
// every schema bounds its strings, numbers and arrays, and JSON whitespace is
// bounded too (at most 22 characters between two tokens), so the grammar ends
// every admitted document within MAX_TOKENS whatever the model prefers;
// `required` tool calls come one per request (parallel_tool_calls false) or
// with a logit bias that closes the array; `auto` tool calls and reasoning
// are forced with a request-level grammar/regex that only admits the
// expected text. Decoding is greedy (temperature 0), so every run sees the
// same tokens.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startServer, requireOpenAI } = require('./harness.cjs');

const NODE_MODULES = process.env.STRATA_NODE_MODULES ||
  path.join(__dirname, '..', '..', 'tools', 'openai-e2e', 'node_modules');
function requirePackage(name) {
  try {
    return require(path.join(NODE_MODULES, name));
  } catch (e) {
    throw new Error(`npm package ${name} not found under ${NODE_MODULES}; ` +
      `run scripts/install-deps.sh (npm ci in tools/openai-e2e): ${e.message}`);
  }
}
const OpenAI = requireOpenAI();
const { z } = requirePackage('zod');
const { ChatOpenAI } = requirePackage('@langchain/openai');
const { HumanMessage, AIMessage, ToolMessage } = requirePackage('@langchain/core/messages');
const ai = requirePackage('ai');
const { createOpenAICompatible } = requirePackage('@ai-sdk/openai-compatible');
globalThis.AI_SDK_LOG_WARNINGS = false;

// The Qwen2.5 chat format for tools (system prompt listing the tools in
// <tools>, assistant calls as <tool_call> JSON, results as <tool_response> in a
// user turn). The fixture checkpoint's own template renders plain turns only
// (no tools), so the suite passes this one with --chat-template, as a vLLM
// user does for such a model.
const QWEN25_TOOL_TEMPLATE = String.raw`
{%- if messages[0].role == 'system' -%}{%- set system_text = messages[0].content -%}
{%- else -%}{%- set system_text = 'You are a helpful assistant.' -%}{%- endif -%}
{{- '<|im_start|>system\n' + system_text -}}
{%- if tools -%}
{{- '\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>' -}}
{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' -}}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- for message in messages -%}
{%- if message.role == 'system' and loop.first -%}
{%- elif message.role == 'assistant' and message.tool_calls -%}
{{- '<|im_start|>assistant' -}}
{%- if message.content -%}{{- '\n' + message.content -}}{%- endif -%}
{%- for call in message.tool_calls -%}
{%- if call.function is defined -%}{%- set call = call.function -%}{%- endif -%}
{{- '\n<tool_call>\n{"name": "' + call.name + '", "arguments": ' -}}
{%- if call.arguments is string -%}{{- call.arguments -}}{%- else -%}{{- call.arguments | tojson -}}{%- endif -%}
{{- '}\n</tool_call>' -}}
{%- endfor -%}
{{- '<|im_end|>\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + message.content + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- else -%}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
`.trim();

// Tools and schemas: every string is bounded (maxLength <= 8), every number
// and array has a range. JSON Schema's maxLength counts code points and the
// random model writes any of them, astral ones included, which zod's .max()
// would count twice (UTF-16 units): the bound is checked per code point and
// emitted as maxLength.
function boundedString(n) {
  return z.string().refine((s) => [...s].length <= n, { message: `more than ${n} code points` })
    .meta({ maxLength: n });
}
const Weather = z.strictObject({ city: boundedString(8), unit: z.enum(['c', 'f']) });
const Add = z.strictObject({ a: z.number().int().min(0).max(99), b: z.number().int().min(0).max(99) });
const Person = z.strictObject({
  name: boundedString(8),
  age: z.number().int().min(0).max(120),
  admin: z.boolean(),
  tags: z.array(z.enum(['x', 'y', 'z'])).max(3),
});
const SCHEMAS = { get_weather: Weather, add: Add };
function jsonSchemaOf(schema) {
  const s = z.toJSONSchema(schema);
  delete s.$schema;
  return s;
}
const OPENAI_TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: jsonSchemaOf(Weather) } },
  { type: 'function', function: { name: 'add', description: 'Adds two integers', parameters: jsonSchemaOf(Add) } },
];

// A hermes tool call and nothing else: what a Qwen model emits for `auto`.
const HERMES_CALL_REGEX = '<tool_call>\\n\\{"name": "get_weather", "arguments": \\{"city": "[a-z]{1,6}", "unit": "(c|f)"\\}\\}\\n</tool_call>';
const HERMES_CALL_GBNF = 'root ::= "<tool_call>\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": {\\"city\\": \\"" ' +
  '[a-z]{1,6} "\\", \\"unit\\": \\"" ("c" | "f") "\\"}}\\n</tool_call>"';
const THINK_REGEX = '<think>[a-z]{3}</think>[a-z]{4}';

const GREEDY = { temperature: 0, seed: 7 };
// Worst case of the largest document below (Person, or one required call):
// ~25 whitespace gaps of <= 22 tokens plus < 150 tokens of text.
const MAX_TOKENS = 1000;
// Token ids of the fixture's byte-level vocabulary: "}" and "]".
const CLOSE_BRACE = 125;
const CLOSE_BRACKET = 93;
const TOOL_CALL_ID = /^(chatcmpl-tool-|call_)[A-Za-z0-9_-]+$/;
const USER = [{ role: 'user', content: 'What is the weather in Paris?' }];

let dir;
let tools;   // --enable-auto-tool-choice --tool-call-parser hermes
let thinks;  // the same plus --reasoning-parser qwen3, grammar enabled in reasoning
let client;
let thinkClient;
let modelName;

async function servedModel(baseURL) {
  const body = await (await fetch(`${baseURL}/v1/models`)).json();
  return body.data[0].id;
}

test.before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-agents-'));
  const template = path.join(dir, 'qwen25_tools.jinja');
  fs.writeFileSync(template, QWEN25_TOOL_TEMPLATE);
  const common = ['--chat-template', template, '--max-model-len', '4096',
    '--enable-auto-tool-choice', '--tool-call-parser', 'hermes'];
  const started = await Promise.allSettled([
    startServer(common),
    // enable_in_reasoning: the request's grammar also covers the <think>
    // section (vLLM's default applies it only after </think>, which a random
    // model never writes).
    startServer([...common, '--reasoning-parser', 'qwen3',
      '--structured-outputs-config', '{"enable_in_reasoning": true}']),
  ]);
  // Keep whichever started, so the after hook stops it even if the other failed.
  [tools, thinks] = started.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
  for (const r of started) if (r.status === 'rejected') throw r.reason;
  modelName = await servedModel(tools.baseURL);
  const opts = { apiKey: 'x', maxRetries: 0, timeout: 60000 };
  client = new OpenAI({ baseURL: `${tools.baseURL}/v1`, ...opts });
  thinkClient = new OpenAI({ baseURL: `${thinks.baseURL}/v1`, ...opts });
});

test.after(async () => {
  const results = await Promise.all([tools, thinks].filter(Boolean).map((s) => s.stop()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  for (const r of results) assert.equal(r.code, 0, `server exit: ${JSON.stringify(r)}`);
});

function chat(params, c = client) {
  return c.chat.completions.create({ model: modelName, messages: USER, max_tokens: MAX_TOKENS, ...GREEDY, ...params });
}

async function chatStream(params, c = client) {
  const stream = await chat({ ...params, stream: true }, c);
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

// Validates one OpenAI tool call against the tool it names; returns its arguments.
function checkToolCall(call, allowed = Object.keys(SCHEMAS)) {
  assert.match(call.id, TOOL_CALL_ID);
  assert.equal(call.type, 'function');
  assert.ok(allowed.includes(call.function.name), `unexpected tool ${call.function.name}`);
  assert.equal(typeof call.function.arguments, 'string');
  return SCHEMAS[call.function.name].parse(JSON.parse(call.function.arguments));
}

// Reassembles streamed tool-call deltas the way vLLM emits them: the first
// delta of each call carries index, id, type and name; the later ones carry
// only argument fragments.
function reassembleToolCalls(chunks) {
  const calls = [];
  for (const c of chunks) {
    for (const choice of c.choices) {
      for (const d of choice.delta.tool_calls ?? []) {
        assert.equal(typeof d.index, 'number');
        if (!calls[d.index]) {
          assert.equal(d.index, calls.length, 'tool call indexes start at 0 and grow by one');
          assert.match(d.id, TOOL_CALL_ID);
          assert.equal(d.type, 'function');
          assert.equal(typeof d.function.name, 'string');
          calls[d.index] = { id: d.id, type: 'function', function: { name: d.function.name, arguments: '' } };
        } else {
          assert.equal(d.id, undefined, 'only the first delta of a call carries its id');
          assert.equal(d.function?.name, undefined, 'only the first delta of a call carries its name');
        }
        calls[d.index].function.arguments += d.function?.arguments ?? '';
      }
    }
  }
  return calls;
}

function finishReasons(chunks) {
  return chunks.flatMap((c) => c.choices.map((x) => x.finish_reason)).filter(Boolean);
}

function streamedContent(chunks) {
  return chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
}

async function expectBadRequest(promise, pattern) {
  await assert.rejects(promise, (e) => {
    assert.equal(e.status, 400, `expected 400, got ${e.status}: ${e.message}`);
    assert.match(e.message, pattern);
    return true;
  });
}

// ---------------------------------------------------------------------------
// OpenAI SDK: the wire format vLLM users rely on.

test('response_format json_schema (strict): content is JSON matching the schema', async () => {
  const r = await chat({
    response_format: { type: 'json_schema', json_schema: { name: 'person', schema: jsonSchemaOf(Person), strict: true } },
  });
  assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
  Person.parse(JSON.parse(r.choices[0].message.content));
});

test('response_format json_object: content is a JSON object', async () => {
  // logit_bias on "}" closes the object as soon as the grammar allows, so the
  // random model cannot wander into an endless string.
  const r = await chat({ response_format: { type: 'json_object' }, max_tokens: 40, logit_bias: { [CLOSE_BRACE]: 100 } });
  const parsed = JSON.parse(r.choices[0].message.content);
  assert.equal(typeof parsed, 'object');
  assert.notEqual(parsed, null);
  assert.ok(!Array.isArray(parsed));
});

test('structured_outputs choice / regex / json / grammar, and the legacy guided_* fields', async () => {
  const cases = [
    [{ structured_outputs: { choice: ['yes', 'no'] } }, (t) => assert.ok(['yes', 'no'].includes(t), t)],
    [{ guided_choice: ['alpha', 'beta', 'gamma'] }, (t) => assert.ok(['alpha', 'beta', 'gamma'].includes(t), t)],
    [{ structured_outputs: { regex: '[a-z]{3}-[0-9]{2}' } }, (t) => assert.match(t, /^[a-z]{3}-[0-9]{2}$/)],
    [{ guided_regex: '(red|blue) [0-9]{1,3}' }, (t) => assert.match(t, /^(red|blue) [0-9]{1,3}$/)],
    [{ structured_outputs: { json: jsonSchemaOf(Weather) } }, (t) => Weather.parse(JSON.parse(t))],
    [{ guided_json: jsonSchemaOf(Add) }, (t) => Add.parse(JSON.parse(t))],
    [{ structured_outputs: { grammar: 'root ::= "ab" [0-9] [0-9] ("!" | "?")' } }, (t) => assert.match(t, /^ab[0-9]{2}[!?]$/)],
    [{ guided_grammar: 'root ::= item ("," item){0,2}\nitem ::= [xyz]{2}' }, (t) => assert.match(t, /^[xyz]{2}(,[xyz]{2}){0,2}$/)],
    [{ structured_outputs: { json_object: true }, logit_bias: { [CLOSE_BRACE]: 100 } }, (t) => assert.equal(typeof JSON.parse(t), 'object')],
  ];
  for (const [extra, check] of cases) {
    const r = await chat(extra);
    const text = r.choices[0].message.content;
    try {
      check(text);
      assert.equal(r.choices[0].finish_reason, 'stop');
    } catch (e) {
      e.message = `${JSON.stringify(extra)} -> ${JSON.stringify(text)} (${r.choices[0].finish_reason}): ${e.message}`;
      throw e;
    }
  }
});

test('structured outputs on /v1/completions and streamed chat', async () => {
  const r = await client.completions.create({
    model: modelName, prompt: 'Answer:', max_tokens: 20, ...GREEDY, structured_outputs: { regex: '[0-9]{4}' } });
  assert.match(r.choices[0].text, /^[0-9]{4}$/);
  const chunks = await chatStream({ structured_outputs: { regex: '[a-z]{3}-[0-9]{2}' }, max_tokens: 20 });
  assert.match(streamedContent(chunks), /^[a-z]{3}-[0-9]{2}$/);
  assert.deepEqual(finishReasons(chunks), ['stop']);
});

test('an unsupported JSON Schema keyword is a 400 naming it; bad regex and two constraints are 400s', async () => {
  const schema = { type: 'object', patternProperties: { '^x': { type: 'string' } } };
  await expectBadRequest(chat({ response_format: { type: 'json_schema', json_schema: { name: 'bad', schema } } }),
    /patternProperties/);
  await expectBadRequest(chat({ structured_outputs: { json: schema } }), /patternProperties/);
  await expectBadRequest(chat({ structured_outputs: { regex: '(a)\\1' } }), /.+/);
  // vLLM allows one constraint per request.
  await expectBadRequest(chat({ structured_outputs: { choice: ['a'], regex: 'a' } }), /.+/);
});

test('tool_choice required: finish_reason tool_calls, valid calls (non-streamed and streamed)', async () => {
  // One call (maxItems 1 in the grammar), so the output is bounded.
  const single = { tools: OPENAI_TOOLS, tool_choice: 'required', parallel_tool_calls: false };
  const r = await chat(single);
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice.message));
  assert.ok(choice.message.content === null || choice.message.content === '', `content ${choice.message.content}`);
  assert.equal(choice.message.tool_calls.length, 1);
  const args = checkToolCall(choice.message.tool_calls[0]);

  const chunks = await chatStream(single);
  assert.deepEqual(finishReasons(chunks), ['tool_calls']);
  const streamed = reassembleToolCalls(chunks);
  assert.equal(streamed.length, 1);
  assert.equal(streamed[0].function.name, choice.message.tool_calls[0].function.name);
  assert.deepEqual(checkToolCall(streamed[0]), args);
  assert.equal(streamedContent(chunks), '');

  // Parallel calls allowed: the bias on "]" closes the array after the first
  // call (inside strings it only fills them with "]", which stays valid).
  const parallel = await chat({ tools: OPENAI_TOOLS, tool_choice: 'required', logit_bias: { [CLOSE_BRACKET]: 100 } });
  assert.equal(parallel.choices[0].finish_reason, 'tool_calls', JSON.stringify(parallel.choices[0].message));
  assert.ok(parallel.choices[0].message.tool_calls.length >= 1);
  for (const c of parallel.choices[0].message.tool_calls) checkToolCall(c);
});

test('named tool_choice: exactly one call to that tool; finish_reason stop as in vLLM', async () => {
  const named = { type: 'function', function: { name: 'add' } };
  const r = await chat({ tools: OPENAI_TOOLS, tool_choice: named });
  const choice = r.choices[0];
  // vLLM (and OpenAI) answer a named tool choice with finish_reason "stop".
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.tool_calls.length, 1);
  const args = checkToolCall(choice.message.tool_calls[0], ['add']);
  assert.ok(!choice.message.content, `content ${choice.message.content}`);

  const chunks = await chatStream({ tools: OPENAI_TOOLS, tool_choice: named });
  assert.deepEqual(finishReasons(chunks), ['stop']);
  const streamed = reassembleToolCalls(chunks);
  assert.equal(streamed.length, 1);
  assert.deepEqual(checkToolCall(streamed[0], ['add']), args);
});

test('tool_choice errors are 400s: an unknown named tool, required without tools', async () => {
  await expectBadRequest(chat({ tools: OPENAI_TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }), /nope/);
  await expectBadRequest(chat({ tool_choice: 'required' }), /tools/);
});

test('tool_choice auto + hermes parser extracts a <tool_call> forced by a grammar or regex', async () => {
  for (const constraint of [{ grammar: HERMES_CALL_GBNF }, { regex: HERMES_CALL_REGEX }]) {
    const params = { tools: OPENAI_TOOLS, tool_choice: 'auto', structured_outputs: constraint };
    const r = await chat(params);
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice.message));
    assert.ok(!choice.message.content, `content ${JSON.stringify(choice.message.content)}`);
    assert.equal(choice.message.tool_calls.length, 1);
    const args = checkToolCall(choice.message.tool_calls[0], ['get_weather']);
    assert.match(args.city, /^[a-z]{1,6}$/);

    const chunks = await chatStream(params);
    assert.deepEqual(finishReasons(chunks), ['tool_calls']);
    const streamed = reassembleToolCalls(chunks);
    assert.equal(streamed.length, 1);
    assert.deepEqual(checkToolCall(streamed[0], ['get_weather']), args);
    assert.doesNotMatch(streamedContent(chunks), /tool_call/);
  }
});

test('tool_choice none and no tool_choice keep plain content', async () => {
  const none = await chat({ tools: OPENAI_TOOLS, tool_choice: 'none', structured_outputs: { regex: HERMES_CALL_REGEX } });
  assert.equal(none.choices[0].finish_reason, 'stop');
  assert.ok(!none.choices[0].message.tool_calls?.length);
  assert.match(none.choices[0].message.content, /^<tool_call>/);
  const plain = await chat({ tools: OPENAI_TOOLS, max_tokens: 8 });
  assert.equal(plain.choices[0].finish_reason, 'length');
  assert.ok(!plain.choices[0].message.tool_calls?.length);
});

test('without --enable-auto-tool-choice: auto is a 400 naming the flags, required still works', async () => {
  const plain = await startServer(['--max-model-len', '4096']);
  try {
    const c = new OpenAI({ baseURL: `${plain.baseURL}/v1`, apiKey: 'x', maxRetries: 0, timeout: 60000 });
    await expectBadRequest(chat({ tools: OPENAI_TOOLS, tool_choice: 'auto' }, c), /--enable-auto-tool-choice/);
    const r = await chat({ tools: OPENAI_TOOLS, tool_choice: 'required', parallel_tool_calls: false }, c);
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    checkToolCall(r.choices[0].message.tool_calls[0]);
  } finally {
    assert.equal((await plain.stop()).code, 0);
  }
});

test('chat history with an assistant tool call (content null) and a tool result renders', async () => {
  const messages = [
    ...USER,
    { role: 'assistant', content: null, tool_calls: [
      { id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '{"city": "paris", "unit": "c"}' } }] },
    { role: 'tool', tool_call_id: 'call_abc123', content: '{"temp": 21}' },
  ];
  const r = await chat({ messages, tools: OPENAI_TOOLS, max_tokens: 4 });
  assert.equal(r.choices[0].finish_reason, 'length');
  // The prompt is the Qwen2.5 tool format: the call as <tool_call> JSON, the
  // result inside <tool_response> in a user turn.
  const tok = await (await fetch(`${tools.baseURL}/tokenize`, { method: 'POST',
    body: JSON.stringify({ model: modelName, messages, tools: OPENAI_TOOLS }) })).json();
  const prompt = (await (await fetch(`${tools.baseURL}/detokenize`, { method: 'POST',
    body: JSON.stringify({ model: modelName, tokens: tok.tokens }) })).json()).prompt;
  assert.ok(prompt.includes('<tools>\n{"type": "function", "function": {"name": "get_weather"'), prompt);
  assert.ok(prompt.includes('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "paris", "unit": "c"}}\n</tool_call><|im_end|>'), prompt);
  assert.ok(prompt.includes('<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n'), prompt);
  assert.equal(r.usage.prompt_tokens, tok.count);
});

test('reasoning parser qwen3: <think> text goes to reasoning, streamed as delta.reasoning', async () => {
  const params = { structured_outputs: { regex: THINK_REGEX }, max_tokens: 40 };
  const r = await chat(params, thinkClient);
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.match(m.reasoning ?? '', /^[a-z]{3}$/, JSON.stringify(m));
  assert.equal(m.reasoning_content, m.reasoning);
  assert.match(m.content, /^[a-z]{4}$/);

  const chunks = await chatStream(params, thinkClient);
  const reasoning = chunks.map((c) => c.choices[0]?.delta.reasoning ?? '').join('');
  assert.equal(reasoning, m.reasoning);
  assert.equal(streamedContent(chunks), m.content);
  // Without reasoning in the output, the qwen3 parser leaves everything as content.
  const plain = await chat({ structured_outputs: { regex: '[a-z]{5}' }, max_tokens: 10 }, thinkClient);
  assert.match(plain.choices[0].message.content, /^[a-z]{5}$/);
  assert.ok(!plain.choices[0].message.reasoning);
});

test('reasoning then a hermes tool call: reasoning split off, the call parsed from the content', async () => {
  const params = { tools: OPENAI_TOOLS, tool_choice: 'auto', max_tokens: 200,
    structured_outputs: { regex: `<think>[a-z]{3}</think>\\n${HERMES_CALL_REGEX}` } };
  const r = await chat(params, thinkClient);
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(m));
  assert.match(m.reasoning ?? '', /^[a-z]{3}$/);
  assert.ok(!m.content, `content ${JSON.stringify(m.content)}`);
  assert.equal(m.tool_calls.length, 1);
  const args = checkToolCall(m.tool_calls[0], ['get_weather']);

  const chunks = await chatStream(params, thinkClient);
  assert.deepEqual(finishReasons(chunks), ['tool_calls']);
  assert.equal(chunks.map((c) => c.choices[0]?.delta.reasoning ?? '').join(''), m.reasoning);
  const streamed = reassembleToolCalls(chunks);
  assert.equal(streamed.length, 1);
  assert.deepEqual(checkToolCall(streamed[0], ['get_weather']), args);
  assert.doesNotMatch(streamedContent(chunks), /tool_call|think/);
});

// ---------------------------------------------------------------------------
// LangChain.js: ChatOpenAI against the server.

function langchain(fields = {}, server = tools) {
  return new ChatOpenAI({
    model: modelName, apiKey: 'x', configuration: { baseURL: `${server.baseURL}/v1` },
    temperature: 0, maxTokens: MAX_TOKENS, maxRetries: 0, timeout: 60000, ...fields,
  });
}
const LC_TOOLS = OPENAI_TOOLS.map((t) => ({ ...t, function: { ...t.function } }));

test('LangChain withStructuredOutput: jsonSchema, functionCalling and jsonMode', async () => {
  const llm = langchain();
  const viaSchema = await llm.withStructuredOutput(Person, { method: 'jsonSchema', name: 'person', strict: true })
    .invoke('Describe a person.');
  Person.parse(viaSchema);
  const viaTool = await llm.withStructuredOutput(Person, { method: 'functionCalling', name: 'person', strict: true })
    .invoke('Describe a person.');
  Person.parse(viaTool);
  const raw = await llm.withStructuredOutput(Weather, { method: 'functionCalling', name: 'get_weather', includeRaw: true })
    .invoke('Weather in Paris?');
  Weather.parse(raw.parsed);
  assert.equal(raw.raw.tool_calls.length, 1);
  assert.match(raw.raw.tool_calls[0].id, TOOL_CALL_ID);
  // jsonMode sends response_format json_object; the bias closes the object at once.
  const Loose = z.object({ note: boundedString(8).optional() });
  const viaJsonMode = await langchain({ logitBias: { [CLOSE_BRACE]: 100 }, maxTokens: 40 })
    .withStructuredOutput(Loose, { method: 'jsonMode' }).invoke('Return JSON.');
  Loose.parse(viaJsonMode);
});

test('LangChain bindTools: tool_choice required, named, and auto forced by a grammar', async () => {
  const checkCalls = (msg, allowed) => {
    assert.equal(msg.invalid_tool_calls.length, 0, JSON.stringify(msg.invalid_tool_calls));
    assert.ok(msg.tool_calls.length >= 1, JSON.stringify(msg));
    for (const c of msg.tool_calls) {
      assert.ok(allowed.includes(c.name), c.name);
      assert.match(c.id, TOOL_CALL_ID);
      SCHEMAS[c.name].parse(c.args);
    }
  };
  const llm = langchain();
  const required = await llm.bindTools(LC_TOOLS, { tool_choice: 'required', parallel_tool_calls: false })
    .invoke('Weather in Paris?');
  checkCalls(required, ['get_weather', 'add']);
  assert.equal(required.tool_calls.length, 1);
  assert.equal(required.response_metadata.finish_reason, 'tool_calls');
  const named = await llm.bindTools(LC_TOOLS, { tool_choice: 'add' }).invoke('Add 2 and 3.');
  checkCalls(named, ['add']);
  assert.equal(named.tool_calls.length, 1);
  const auto = await langchain({ modelKwargs: { structured_outputs: { grammar: HERMES_CALL_GBNF } } })
    .bindTools(LC_TOOLS, { tool_choice: 'auto' }).invoke('Weather in Paris?');
  checkCalls(auto, ['get_weather']);
  assert.equal(auto.response_metadata.finish_reason, 'tool_calls');
});

test('LangChain .stream() reassembles tool_call_chunks into tool_calls', async () => {
  for (const [llm, choice] of [[langchain(), 'required'],
    [langchain({ modelKwargs: { structured_outputs: { regex: HERMES_CALL_REGEX } } }), 'auto']]) {
    let acc;
    let numChunks = 0;
    const bound = llm.bindTools(LC_TOOLS, { tool_choice: choice, parallel_tool_calls: false });
    for await (const chunk of await bound.stream('Weather in Paris?')) {
      acc = acc ? acc.concat(chunk) : chunk;
      numChunks++;
    }
    assert.ok(numChunks > 2, `${choice}: ${numChunks} chunks`);
    assert.ok(acc.tool_call_chunks.length >= 1, `${choice}: no tool_call_chunks`);
    assert.equal(acc.invalid_tool_calls.length, 0, JSON.stringify(acc.invalid_tool_calls));
    assert.equal(acc.tool_calls.length, acc.tool_call_chunks.length);
    for (const c of acc.tool_calls) {
      assert.match(c.id, TOOL_CALL_ID);
      SCHEMAS[c.name].parse(c.args);
    }
    if (choice === 'auto') assert.equal(acc.tool_calls[0].name, 'get_weather');
  }
});

test('LangChain replays a tool call and its ToolMessage result', async () => {
  const llm = langchain({ maxTokens: 6 }).bindTools(LC_TOOLS);
  const reply = await llm.invoke([
    new HumanMessage('Weather in Paris?'),
    new AIMessage({ content: '', tool_calls: [{ id: 'call_lc1', name: 'get_weather', args: { city: 'paris', unit: 'c' } }] }),
    new ToolMessage({ tool_call_id: 'call_lc1', content: 'sunny, 21 C' }),
  ]);
  assert.equal(typeof reply.content, 'string');
  assert.equal(reply.response_metadata.finish_reason, 'length');
});

test('LangChain exposes reasoning_content from the reasoning parser', async () => {
  const llm = langchain({ modelKwargs: { structured_outputs: { regex: THINK_REGEX } }, maxTokens: 40 }, thinks);
  const msg = await llm.invoke('Think first.');
  assert.match(msg.additional_kwargs.reasoning_content ?? '', /^[a-z]{3}$/, JSON.stringify(msg.additional_kwargs));
  assert.match(msg.content, /^[a-z]{4}$/);
});

// ---------------------------------------------------------------------------
// Vercel AI SDK: @ai-sdk/openai-compatible against the server.

function aiModel(options = {}, server = tools) {
  return createOpenAICompatible({ name: 'strata', baseURL: `${server.baseURL}/v1`, apiKey: 'x', ...options })
    .chatModel(modelName);
}
const AI_COMMON = { temperature: 0, seed: 7, maxRetries: 0, maxOutputTokens: MAX_TOKENS };
// Extra body fields travel as providerOptions under the provider's name.
const ONE_CALL = { strata: { parallel_tool_calls: false } };
const AI_TOOLS = {
  get_weather: ai.tool({ description: 'Weather in a city', inputSchema: Weather }),
  add: ai.tool({ description: 'Adds two integers', inputSchema: Add }),
};

test('AI SDK generateObject / streamObject with structuredOutputs on and off', async () => {
  const strictModel = aiModel({ supportsStructuredOutputs: true });
  const r = await ai.generateObject({ model: strictModel, schema: Person, prompt: 'Describe a person.', ...AI_COMMON });
  Person.parse(r.object);
  assert.equal(r.finishReason, 'stop');

  const s = ai.streamObject({ model: strictModel, schema: Person, prompt: 'Describe a person.', ...AI_COMMON });
  let partials = 0;
  for await (const partial of s.partialObjectStream) { assert.equal(typeof partial, 'object'); partials++; }
  Person.parse(await s.object);
  assert.ok(partials >= 2, `${partials} partial objects`);

  // Without structuredOutputs the provider sends response_format json_object
  // (the schema only goes into the prompt); the bias closes the object at once.
  const Loose = z.object({ note: boundedString(8).optional() });
  const loose = await ai.generateObject({ model: aiModel(), schema: Loose, prompt: 'Return JSON.', ...AI_COMMON,
    maxOutputTokens: 40, providerOptions: { strata: { logit_bias: { [CLOSE_BRACE]: 100 } } } });
  Loose.parse(loose.object);
});

test('AI SDK generateText with tools: toolChoice required and a named tool', async () => {
  const model = aiModel();
  const req = await ai.generateText({ model, tools: AI_TOOLS, toolChoice: 'required', prompt: 'Weather in Paris?', ...AI_COMMON,
    providerOptions: ONE_CALL });
  assert.equal(req.finishReason, 'tool-calls');
  assert.equal(req.toolCalls.length, 1);
  for (const c of req.toolCalls) {
    assert.match(c.toolCallId, TOOL_CALL_ID);
    SCHEMAS[c.toolName].parse(c.input);
  }
  const named = await ai.generateText({ model, tools: AI_TOOLS, toolChoice: { type: 'tool', toolName: 'add' },
    prompt: 'Add 2 and 3.', ...AI_COMMON });
  assert.equal(named.toolCalls.length, 1);
  assert.equal(named.toolCalls[0].toolName, 'add');
  Add.parse(named.toolCalls[0].input);
  assert.equal(named.finishReason, 'stop');
  const auto = await ai.generateText({ model, tools: AI_TOOLS, toolChoice: 'auto', prompt: 'Weather in Paris?', ...AI_COMMON,
    providerOptions: { strata: { structured_outputs: { grammar: HERMES_CALL_GBNF } } } });
  assert.equal(auto.finishReason, 'tool-calls');
  assert.deepEqual(auto.toolCalls.map((c) => c.toolName), ['get_weather']);
  Weather.parse(auto.toolCalls[0].input);
});

test('AI SDK streamText with tools reassembles the streamed calls', async () => {
  for (const [toolChoice, providerOptions] of [['required', ONE_CALL],
    ['auto', { strata: { structured_outputs: { regex: HERMES_CALL_REGEX } } }]]) {
    const result = ai.streamText({ model: aiModel(), tools: AI_TOOLS, toolChoice, providerOptions,
      prompt: 'Weather in Paris?', ...AI_COMMON });
    const types = new Set();
    for await (const part of result.fullStream) {
      if (part.type === 'error') throw part.error;
      types.add(part.type);
    }
    const calls = await result.toolCalls;
    assert.ok(calls.length >= 1, `${toolChoice}: no tool calls; parts ${[...types]}`);
    for (const c of calls) SCHEMAS[c.toolName].parse(c.input);
    assert.ok(types.has('tool-input-delta'), `${toolChoice}: parts ${[...types]}`);
    assert.equal(await result.finishReason, 'tool-calls');
    if (toolChoice === 'auto') assert.equal(calls[0].toolName, 'get_weather');
  }
});

test('AI SDK agent loop: a tool executes and its result is replayed in the next step', async () => {
  const executed = [];
  const loopTools = {
    get_weather: ai.tool({ description: 'Weather in a city', inputSchema: Weather,
      execute: async (input) => { executed.push(input); return { temp: 21 }; } }),
  };
  const result = await ai.generateText({
    model: aiModel(), tools: loopTools, toolChoice: 'required', prompt: 'Weather in Paris?', ...AI_COMMON,
    providerOptions: ONE_CALL, stopWhen: ai.stepCountIs(2),
    prepareStep: ({ stepNumber }) => (stepNumber === 0 ? {} : { toolChoice: 'none', maxOutputTokens: 8 }),
  });
  assert.equal(result.steps.length, 2);
  assert.ok(executed.length >= 1);
  for (const input of executed) Weather.parse(input);
  assert.equal(result.steps[1].finishReason, 'length');
  assert.equal(typeof result.text, 'string');
});

test('AI SDK reasoning: reasoningText from the reasoning parser (generateText and streamText)', async () => {
  const opts = { model: aiModel({}, thinks), prompt: 'Think first.', ...AI_COMMON, maxOutputTokens: 40,
    providerOptions: { strata: { structured_outputs: { regex: THINK_REGEX } } } };
  const r = await ai.generateText(opts);
  assert.match(r.reasoningText ?? '', /^[a-z]{3}$/);
  assert.match(r.text, /^[a-z]{4}$/);
  const s = ai.streamText(opts);
  let reasoning = '';
  for await (const part of s.fullStream) {
    if (part.type === 'error') throw part.error;
    if (part.type === 'reasoning-delta') reasoning += part.text;
  }
  assert.equal(reasoning, r.reasoningText);
  assert.equal(await s.text, r.text);
});
