/**
 * A stand-in for the real vocabulary's size and shape, for measuring constrained decoding: the
 * byte strings of fixtures/grammar/bpe-vocab-248k.bin.gz (see its README) plus Qwen's 33 added
 * tokens, as a tokenizer (no merges: it encodes byte by byte). The model files here carry a
 * placeholder vocabulary of 256 byte tokens, on which a token mask is trivially cheap.
 */
import * as fs from 'node:fs';
import * as zlib from 'node:zlib';
import { BYTE_TO_UNICODE } from '../../ts/tokenizer/byte-unicode.js';
import { Tokenizer } from '../../ts/tokenizer/tokenizer.js';
import { ADDED_TOKENS } from '../../ts/model/synthetic-model.js';
import { GgufValueType } from '../../ts/gguf/value-types.js';
import type { GgufFile } from '../../ts/gguf/index.js';

export function bpeVocabTokenizer(file: string): Tokenizer {
  const raw = zlib.gunzipSync(fs.readFileSync(file));
  const tokens: string[] = [], types: number[] = [];
  for (let o = 0; o < raw.length;) {
    const n = raw.readUInt16LE(o);
    tokens.push(Array.from(raw.subarray(o + 2, o + 2 + n), (b) => BYTE_TO_UNICODE[b]).join(''));
    types.push(1);
    o += 2 + n;
  }
  for (const [t, ty] of ADDED_TOKENS) { tokens.push(t); types.push(ty); }
  const meta = new Map<string, { type: GgufValueType; value: unknown }>([
    ['tokenizer.ggml.model', { type: GgufValueType.STRING, value: 'gpt2' }],
    ['tokenizer.ggml.tokens', { type: GgufValueType.ARRAY, value: tokens }],
    ['tokenizer.ggml.token_type', { type: GgufValueType.ARRAY, value: Int32Array.from(types) }],
  ]);
  return new Tokenizer({ path: file, metadata: meta } as unknown as GgufFile);
}
