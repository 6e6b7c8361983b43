/**
 * Writes fixtures/quantize/oracle-tensors.json from ../shared/oracle (llama.cpp's quantizer
 * outputs and its Q8_0 tinyA): per file, every tensor's name, type, shape and the sha256 of its
 * bytes, and digests of the metadata, so the tests can demand byte identity without carrying
 * 16 MB of GGUFs.   npx tsx scripts/check/oracle-quantize-hashes.ts [ORACLE_DIR]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { digestGguf } from '../lib/gguf-digest.js';

const dir = process.argv[2] ?? '../shared/oracle';
const files: Record<string, string> = {
  'tinyA-qz-q2.gguf': 'quantize/tinyA-qz-q2.gguf',
  'tinyA-qz-q2q4.gguf': 'quantize/tinyA-qz-q2q4.gguf',
  'tinyA-qz-q2-from-q8_0.gguf': 'quantize/tinyA-qz-q2-from-q8_0.gguf',
  'tinyA-q8_0.gguf': 'tinyA/tinyA-q8_0.gguf',
};
const out = Object.fromEntries(Object.entries(files).map(([name, rel]) => [name, digestGguf(path.join(dir, rel))]));
fs.writeFileSync('fixtures/quantize/oracle-tensors.json', JSON.stringify(out, null, 1) + '\n');
console.log(`fixtures/quantize/oracle-tensors.json: ${Object.keys(out).length} files`);
