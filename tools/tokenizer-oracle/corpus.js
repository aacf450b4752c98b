// Deterministic (seeded) generator of varied test strings for tokenizer
// conformance. Every case is a Buffer of raw bytes; some are deliberately not
// valid UTF-8. Pure JavaScript, no dependencies.
'use strict';

function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the of and to in is was he that it for you with his had on at by I which her as be this not ' +
  'but from have they she all were we one been their said there an so would my who what up when ' +
  'Elizabeth Darcy Mr. Mrs. Bennet LORD God children Israel tokenizer server cache latency request ' +
  'don\'t it\'s we\'re they\'ve I\'m you\'ll she\'d IT\'S WE\'RE Don\'T o\'clock rock\'n\'roll ' +
  'well-known state-of-the-art e-mail naïve café résumé coöperate façade Zürich São Paulo ' +
  'hello world quick brown fox jumps over lazy dog antidisestablishmentarianism supercalifragilistic'
).split(' ');

const PUNCT = ['.', ',', ';', ':', '!', '?', '...', ' —', ' -', '"', '\'', '(', ')', '[', ']', '…', '!!', '?!'];

const MULTILINGUAL = [
  'Der schnelle braune Fuchs springt über den faulen Hund. Größe, Straße, Ärger.',
  'Le cœur a ses raisons que la raison ne connaît point. Où est l\'hôtel ?',
  '¿Dónde está la biblioteca? ¡Qué día tan bonito! Mañana será otro día.',
  'Съешь же ещё этих мягких французских булок, да выпей чаю.',
  'Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Καλημέρα κόσμε!',
  'مرحبا بالعالم. هذه جملة عربية للاختبار مع أرقام ١٢٣٤٥.',
  'שלום עולם! זהו משפט בעברית.',
  'नमस्ते दुनिया। यह एक परीक्षण वाक्य है।',
  'สวัสดีชาวโลก นี่คือประโยคทดสอบภาษาไทย',
  'Tiếng Việt có dấu: Chào thế giới, người Việt Nam.',
  '日本語のテキストです。カタカナとひらがな、漢字が混ざっています。',
  '我们正在测试分词器。中文文本没有空格，标点符号也不同！',
  '한국어 문장입니다. 토크나이저를 테스트합니다.',
  'Türkçe: Iğdır, İstanbul, ıslık, şeker, çiçek.',
  'Polski: Zażółć gęślą jaźń. Čeština: Příliš žluťoučký kůň.',
  'ქართული ენა · Հայերեն · አማርኛ · ᏣᎳᎩ · 𐌰𐌱𐌲 · 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'Ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ　１２３ and ﬁ ligature and Ⅻ roman and ½ fraction',
  'e\u0301 vs é, A\u030A vs Å, 한 vs \u1112\u1161\u11AB (Hangul jamo), ſ long s, K Kelvin',
];

const EMOJI = [
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇯🇵', '🇺🇸🇬🇧', '❤️', '🧑🏿‍💻', '👩‍❤️‍💋‍👨', '#️⃣', '🫠', '🦀', '✨', '☕', '1️⃣',
  '🏴󠁧󠁢󠁳󠁣󠁴󠁿',
];

const CODE = [
  'int main(int argc, char** argv) {\n  std::vector<int> v{1, 2, 3};\n  return v.size() > 2 ? 0 : 1;\n}\n',
  'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\nprint([fib(i) for i in range(10)])\n',
  '{"model": "llama", "messages": [{"role": "user", "content": "Hi!\\n"}], "temperature": 0.7}',
  '<html>\n  <body class="main">\n    <p>Hello &amp; welcome</p>\n  </body>\n</html>',
  'SELECT id, name FROM users WHERE age >= 18 AND name LIKE \'%son\' ORDER BY id DESC;',
  'fn main() { let x: Vec<u8> = b"bytes".to_vec(); println!("{:?}", x); }',
  '#!/bin/bash\nfor f in *.txt; do\n\techo "$f" | tr a-z A-Z >> out.log\ndone\n',
  'const re = /\\p{L}+/gu; x => x ** 2; a !== b && c ?? d; `template ${value}`',
  '    \t\tindented_with_tabs_and_spaces = True  # comment\r\n',
  'https://example.com/path?q=tokenizer&lang=en#section-2 user@example.org 192.168.0.1:8080',
];

const WHITESPACE = [' ', '  ', '   ', '\t', '\t\t', '\n', '\n\n', '\r\n', ' \n ', '\u00A0', '\u3000',
  '\u2028', '\u2003', '\u200B', ' \t \n', '\n\n\n\n', '        '];

function pick(rng, list) { return list[Math.floor(rng() * list.length)]; }
function int(rng, lo, hi) { return lo + Math.floor(rng() * (hi - lo + 1)); }

function prose(rng, words) {
  const out = [];
  for (let i = 0; i < words; i++) {
    let w = pick(rng, WORDS);
    if (i === 0 || rng() < 0.08) w = w.charAt(0).toUpperCase() + w.slice(1);
    out.push(w);
    if (rng() < 0.12) out[out.length - 1] += pick(rng, PUNCT);
  }
  return out.join(' ') + (rng() < 0.7 ? '.' : '');
}

function digits(rng) {
  const forms = [
    () => String(int(rng, 0, 9)),
    () => String(Math.floor(rng() * 1e9)),
    () => String(Math.floor(rng() * 1e15)) + String(int(rng, 0, 999999)),
    () => (rng() * 1e4).toFixed(int(rng, 0, 6)),
    () => `${int(rng, 1900, 2100)}-${String(int(rng, 1, 12)).padStart(2, '0')}-${String(int(rng, 1, 28)).padStart(2, '0')}`,
    () => `+1 (${int(rng, 100, 999)}) ${int(rng, 100, 999)}-${int(rng, 1000, 9999)}`,
    () => `v${int(rng, 0, 9)}.${int(rng, 0, 99)}.${int(rng, 0, 999)}`,
    () => '١٢٣ ٤٥٦ ۷۸۹ १२३ 一二三 ①②③ ⅷ',
  ];
  return pick(rng, forms)();
}

function randomCodePoint(rng) {
  const ranges = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff],
    [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f],
    [0x2190, 0x23ff], [0x3000, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xfe00, 0xfe0f],
    [0xff00, 0xffef], [0x1f300, 0x1faff], [0x20000, 0x2a6df], [0xe0000, 0xe007f]];
  const [lo, hi] = pick(rng, ranges);
  return String.fromCodePoint(int(rng, lo, hi));
}

function randomUnicode(rng, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += rng() < 0.15 ? pick(rng, WHITESPACE) : randomCodePoint(rng);
  return s;
}

function invalidBytes(rng) {
  const fragments = [
    [0xff], [0xfe], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80],
    [0x80], [0xbf], [0xe4, 0xbd], [0xf0, 0x9f, 0x98], [0xc3], [0xf8, 0x88, 0x80, 0x80, 0x80],
  ];
  const parts = [];
  const n = int(rng, 1, 6);
  for (let i = 0; i < n; i++) {
    parts.push(Buffer.from(rng() < 0.5 ? prose(rng, int(rng, 1, 4)) : pick(rng, MULTILINGUAL).slice(0, int(rng, 1, 12)), 'utf8'));
    const frag = rng() < 0.3 ? Array.from({ length: int(rng, 1, 5) }, () => int(rng, 0x80, 0xff)) : pick(rng, fragments);
    parts.push(Buffer.from(frag));
  }
  return Buffer.concat(parts);
}

function withSpecials(rng, specials) {
  const pieces = [];
  const n = int(rng, 2, 7);
  for (let i = 0; i < n; i++) {
    const r = rng();
    if (r < 0.4) pieces.push(pick(rng, specials));
    else if (r < 0.5) { const s = pick(rng, specials); pieces.push(s.slice(0, int(rng, 1, s.length - 1))); }
    else if (r < 0.6) pieces.push(pick(rng, WHITESPACE));
    else pieces.push(prose(rng, int(rng, 1, 6)));
  }
  return pieces.join(rng() < 0.5 ? '' : pick(rng, [' ', '\n', '  ']));
}

function chat(rng) {
  const msgs = ['<|im_start|>system\nYou are helpful.<|im_end|>\n', '<|im_start|>user\n' + prose(rng, 8) + '<|im_end|>\n',
    '<|im_start|>assistant\n', '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n' + prose(rng, 6) + '<|eot_id|>',
    '<s>[INST] ' + prose(rng, 5) + ' [/INST]', ' </s>', '<|endoftext|>'];
  let s = '';
  for (let i = 0; i < int(rng, 1, 4); i++) s += pick(rng, msgs);
  return s;
}

const GENERATORS = [
  ['prose', 6, (rng) => prose(rng, int(rng, 1, 60))],
  ['prose_long', 1, (rng) => Array.from({ length: int(rng, 3, 12) }, () => prose(rng, int(rng, 20, 80))).join(pick(rng, ['\n\n', ' ', '\n']))],
  ['multilingual', 3, (rng) => Array.from({ length: int(rng, 1, 3) }, () => pick(rng, MULTILINGUAL)).join(pick(rng, [' ', '\n', '']))],
  ['cjk_mix', 1, (rng) => pick(rng, MULTILINGUAL.slice(10, 13)) + prose(rng, 3) + pick(rng, MULTILINGUAL.slice(10, 13))],
  ['emoji', 2, (rng) => Array.from({ length: int(rng, 1, 8) }, () => (rng() < 0.5 ? pick(rng, EMOJI) : pick(rng, WORDS))).join(pick(rng, ['', ' ']))],
  ['code', 3, (rng) => pick(rng, CODE) + (rng() < 0.3 ? pick(rng, CODE) : '')],
  ['whitespace', 2, (rng) => Array.from({ length: int(rng, 1, 10) }, () => (rng() < 0.6 ? pick(rng, WHITESPACE).repeat(int(rng, 1, 20)) : pick(rng, WORDS))).join('')],
  ['digits', 2, (rng) => Array.from({ length: int(rng, 1, 5) }, () => (rng() < 0.6 ? digits(rng) : pick(rng, WORDS))).join(pick(rng, [' ', '', ', ']))],
  ['specials', 3, null],  // filled per call with the union of special tokens
  ['chat', 1, (rng) => chat(rng)],
  ['random_unicode', 2, (rng) => randomUnicode(rng, int(rng, 1, 40))],
  ['invalid_utf8', 2, null],
];

const FIXED = ['', ' ', '  ', '\n', '\t', 'a', 'A', 'I', '\'s', ' \'s', 'IT\'S', 'ſ\'s', '\u00A0', '\u3000', '\uFFFD',
  'a'.repeat(5000), ' '.repeat(3000), '\n'.repeat(500), '\t \n'.repeat(300), '1234567890'.repeat(50),
  '😀'.repeat(200), '你好'.repeat(500), 'hello\u200Dworld', 'x\u0301\u0302\u0303', '<s>', '</s>', '<unk>',
  '<|endoftext|>', '<|im_start|>', '<s><s></s>', '<<s>>', '<|endoftext|><|endoftext|>', 'test<|endoftext|>test',
  '▁', '▁▁hello', '▁ ▁', '<0x41>', 'Ġ', 'ĠĠhello', 'ÿ', '\r', '\r\n\r\n', '\u0085', '\u000B\u000C'];

// Returns [{category, bytes}] of `count` cases (fixed edge cases first).
function generateCases(count, seed, specials) {
  const rng = mulberry32(seed);
  const cases = FIXED.map((s) => ({ category: 'fixed', bytes: Buffer.from(s, 'utf8') }));
  const weights = GENERATORS.reduce((a, g) => a + g[1], 0);
  while (cases.length < count) {
    let r = rng() * weights;
    const gen = GENERATORS.find((g) => (r -= g[1]) < 0) || GENERATORS[0];
    let bytes;
    if (gen[0] === 'invalid_utf8') bytes = invalidBytes(rng);
    else if (gen[0] === 'specials') bytes = Buffer.from(withSpecials(rng, specials), 'utf8');
    else bytes = Buffer.from(gen[2](rng), 'utf8');
    cases.push({ category: gen[0], bytes });
  }
  return cases;
}

module.exports = { generateCases, mulberry32, prose };
