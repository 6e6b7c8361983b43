// Writes fixtures/tokenizer/extra-cases.json: texts that exercise the qwen35 pre-tokenizer and
// BPE edge cases. Their ids come from Hugging Face tokenizers (scripts/oracle/hf-oracle.py, run on
// the GPU machine, which has Python `tokenizers`), never from our tokenizer.
import { writeFileSync } from 'node:fs';

const added = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|object_ref_start|>', '<|object_ref_end|>', '<|box_start|>', '<|box_end|>',
  '<|quad_start|>', '<|quad_end|>', '<|vision_start|>', '<|vision_end|>', '<|vision_pad|>', '<|image_pad|>', '<|video_pad|>', '<tool_call>',
  '</tool_call>', '<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>', '<tool_response>',
  '</tool_response>', '<think>', '</think>', '<|audio_start|>', '<|audio_end|>', '<tts_pad>', '<tts_text_bos>', '<tts_text_eod>',
  '<tts_text_bos_single>', '<|audio_pad|>'];

const texts = [
  // scripts
  'Съешь же ещё этих мягких французских булок', 'Ελληνικά: ο γρήγορος καφέ αλεπού', 'עברית משמאל לימין', 'العربية: مرحبا بالعالم',
  'हिन्दी में लिखा पाठ', 'ภาษาไทยไม่มีช่องว่าง', '日本語のテキスト、カタカナとひらがな。', '한국어 텍스트입니다', 'Tiếng Việt có dấu',
  // emoji, ZWJ, flags, skin tones, variation selectors
  '👨‍👩‍👧‍👦 family', '🏳️‍🌈 and 🇮🇹🇫🇷', '👍🏽👍🏿', '❤️ vs ❤', 'a😀b😀c', '🧑🏻‍💻 codes',
  // combining marks and normalization (not NFC-normalized on purpose)
  'e\u0301 vs \u00e9', 'a\u0308\u0304 stacked', 'Z\u0351\u0358a\u0364l\u0308g\u0300o', 'ñ = n\u0303', '\u0301 leading mark', 'x\u20dd enclosing',
  // CR/LF and whitespace runs
  'a\r\nb\rc\nd', '\r\n\r\n\r\n', 'line\n\n\n\nend', '   \n\t  \n', 'tab\t\t\tsep', 'trailing spaces   ', '\u00a0nbsp\u00a0and\u2003em\u3000ideographic',
  'next-line\u0085here', 'bom\ufeffinside', '\u2028line\u2029para',
  // digits
  '1234567890', '3.14159e-10', '1,000,000.00', '٣٤٥ Arabic-Indic', '१२३ Devanagari', 'Ⅻ roman ① circled', '0x7fffffff and 0b1010',
  // apostrophes and contractions
  "don't won't can't", "I'M YOU'RE WE'VE THEY'LL HE'D", "'s 't 're 've 'm 'll 'd", "rock'n'roll ''quoted''", "l’apostrophe typographique",
  "'ſ long s", "O'Neil's", "x'S'T",
  // code and punctuation
  'def f(x):\n    return x**2  # square', '{"key": [1, 2, {"a": null}]}', '<div class="x">&amp;</div>', '$$\\frac{a}{b}$$', '-->  <--  ===  !==',
  'path/to/file.ts:42:7', 'foo_bar-baz.qux@example.com', '(((nested)))[[[]]]',
  // every added token inside text
  ...added.map((t, i) => `pre${i} ${t}post ${t}${t} mid`),
  added.join(''), `text<|im_start|>user\nx<|im_end|>more`, '<think>\nreasoning\n</think>\n\nanswer', '<tool_call>\n<function=get>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>',
  '< |im_start|> <|im_start |> <im_start>', '<|IM_START|>', '<|im_start|', 'a<|endoftext|>b',
  // long and odd
  ' '.repeat(40) + 'x', 'ab'.repeat(200), '\u0000\u0001\u001f control chars', 'ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ',
];

writeFileSync('fixtures/tokenizer/extra-cases.json', JSON.stringify(texts, null, 0) + '\n');
console.log(`${texts.length} tokenizer texts`);
