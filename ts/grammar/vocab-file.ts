/**
 * A vocabulary from a file, for measuring constrained decoding where the model's own is a
 * placeholder (the synthetic models carry 256 byte tokens, on which a token mask costs nothing):
 * records of `u16 length, bytes`, gzip'd (fixtures/grammar/bpe-vocab-248k.bin.gz, a byte-level
 * BPE vocabulary of the real model's size, see its README), plus Qwen's 33 added tokens, as a
 * tokenizer (no merges: it encodes byte by byte). q36-bench --grammar-vocab reads it.
 */
import * as fs from 'node:fs';
import * as zlib from 'node:zlib';
import { BYTE_TO_UNICODE } from '../tokenizer/byte-unicode.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { ADDED_TOKENS } from '../model/synthetic-model.js';
import { GgufValueType } from '../gguf/value-types.js';
import type { GgufFile } from '../gguf/index.js';

export function vocabFileTokenizer(file: string): Tokenizer {
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
