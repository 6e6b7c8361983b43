/**
 * The qwen35 pre-tokenizer split (model-spec §5). The Hugging Face regex is
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * Two translations to JavaScript: the case-insensitive group is spelled out (as llama.cpp does),
 * and \s is the Unicode White_Space set that the Rust/Oniguruma engines use (JavaScript's \s
 * also contains U+FEFF and lacks U+0085).
 */
const WS = '\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const S = `[${WS}]`;
const NOT_S = `[^${WS}]`;

export const QWEN35_SPLIT = new RegExp(
  [
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])",
    '[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+',
    '\\p{N}',
    ` ?[^${WS}\\p{L}\\p{M}\\p{N}]+[\\r\\n]*`,
    `${S}*[\\r\\n]+`,
    `${S}+(?!${NOT_S})`,
    `${S}+`,
  ].join('|'),
  'gu',
);

/** Splits text into pre-tokens. Every character belongs to exactly one piece (nothing is dropped). */
export function pretokenize(text: string): string[] {
  return text.match(QWEN35_SPLIT) ?? [];
}
