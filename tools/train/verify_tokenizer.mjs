// Encode/decode the cases written by verify_tokenizer.py with the official HF tokenizers (npm `tokenizers`).
// Usage: node verify_tokenizer.mjs TOKENIZER_JSON CASES_JSONL
import fs from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");

const [tjPath, casesPath] = process.argv.slice(2);
const tok = Tokenizer.fromFile(tjPath);
const rows = fs.readFileSync(casesPath, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
const eq = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
let idsOk = 0, bosOk = 0, decOk = 0, decSkipOk = 0, decApplicable = 0, fail = 0;
for (const r of rows) {
  const enc = await tok.encode(r.text, null, { addSpecialTokens: false });
  const ids = Array.from(enc.getIds());
  if (eq(ids, r.ids)) idsOk++;
  else if (fail++ < 10) console.log("MISMATCH", JSON.stringify(r.text), JSON.stringify(ids), JSON.stringify(r.ids));
  const encB = await tok.encode(r.text, null, { addSpecialTokens: true });
  if (eq(Array.from(encB.getIds()), [1, ...r.ids])) bosOk++;
  // decode(ids) must give back the text. Not applicable to strings with special tokens (Llama-2 legacy:
  // every segment after a special token got a "▁" prefix, which decodes to a space) or with a literal "▁".
  if (/<unk>|<s>|<\/s>|<\|im_start\|>|<\|im_end\|>|\u2581/.test(r.text)) continue;
  decApplicable++;
  const dec = await tok.decode(r.ids, false);
  if (dec === r.text) decOk++;
  else if (fail++ < 10) console.log("DECODE", JSON.stringify(r.text), JSON.stringify(dec));
}
console.log(`tokenizers: ids equal ${idsOk}/${rows.length}, with <s> ${bosOk}/${rows.length}, decode round-trip ${decOk}/${decApplicable} (strings without special tokens or literal U+2581)`);
process.exit(idsOk === rows.length && bosOk === rows.length && decOk === decApplicable ? 0 : 1);
