// Render tokenizer_config.json's chat template with @huggingface/jinja and tokenize the result with the
// official tokenizers; compare with the expected ChatML text (what the training data used).
// Usage: node check_chat_template.mjs MODEL_DIR
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { Template } = require("@huggingface/jinja");
const { Tokenizer } = require("tokenizers");

const dir = process.argv[2];
const tc = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
const tok = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
const tpl = new Template(tc.chat_template);
const cases = [
  { messages: [{ role: "user", content: "Any advice for today?" }], add_generation_prompt: true,
    want: "<|im_start|>user\nAny advice for today?<|im_end|>\n<|im_start|>assistant\n" },
  { messages: [{ role: "system", content: "Answer briefly." }, { role: "user", content: "Hi" },
               { role: "assistant", content: "Hello." }, { role: "user", content: "Bye" }], add_generation_prompt: false,
    want: "<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n" +
          "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n" },
];
let ok = 0;
for (const c of cases) {
  const got = tpl.render({ messages: c.messages, add_generation_prompt: c.add_generation_prompt,
                           bos_token: tc.bos_token, eos_token: tc.eos_token });
  const enc = await tok.encode(got, null, { addSpecialTokens: true });
  const ids = Array.from(enc.getIds());
  const good = got === c.want && ids[0] === 1;
  ok += good ? 1 : 0;
  console.log(good ? "OK  " : "FAIL", JSON.stringify(got), JSON.stringify(ids));
}
console.log(`chat template: ${ok}/${cases.length} renderings as expected`);
process.exit(ok === cases.length ? 0 : 1);
