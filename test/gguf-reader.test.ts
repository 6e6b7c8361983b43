import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { gguf as hfGguf } from '@huggingface/gguf';
import { readGguf, readTensorBytes, typeName, GgufValueType } from '../ts/gguf/index.js';
import { validateModel } from '../ts/model/shape.js';
import { ORACLE_GGUFS, fixture } from './helpers.js';

describe('GGUF reader on the oracle files (written by llama.cpp)', () => {
  for (const rel of ORACLE_GGUFS) {
    it(`reads ${rel} like @huggingface/gguf does`, async () => {
      const p = fixture(rel);
      const f = readGguf(p);
      const ref = await hfGguf(p, { allowLocalFile: true });
      expect(f.version).toBe(Number(ref.metadata.version));
      expect(f.tensors.length).toBe(ref.tensorInfos.length);
      expect(f.dataStart).toBe(Number(ref.tensorDataOffset));
      for (let i = 0; i < f.tensors.length; i++) {
        const a = f.tensors[i];
        const b = ref.tensorInfos[i];
        expect(a.name).toBe(b.name);
        expect(a.shape).toEqual(b.shape.map(Number));
        expect(a.type).toBe(b.dtype);
        expect(a.relOffset).toBe(Number(b.offset));
      }
      expect(f.metadata.get('general.architecture')?.value).toBe('qwen35moe');
      const toks = f.metadata.get('tokenizer.ggml.tokens');
      expect(toks?.type).toBe(GgufValueType.ARRAY);
      expect((toks?.value as string[]).length).toBe((ref.metadata['tokenizer.ggml.tokens'] as string[]).length);
      expect((toks?.value as string[])[500]).toBe((ref.metadata['tokenizer.ggml.tokens'] as string[])[500]);
      // the whole file is accounted for: last tensor (padded) ends at the file end
      const last = f.tensors[f.tensors.length - 1];
      expect(last.offset + last.nbytes).toBeLessThanOrEqual(f.fileSize);
      validateModel(f);
    });
  }

  it('reads tensor bytes on demand at the right offset', () => {
    const p = fixture('tinyA/tinyA-bf16.gguf');
    const f = readGguf(p);
    const t = f.tensorByName.get('output_norm.weight')!;
    expect(typeName(t.type)).toBe('F32');
    const buf = new Uint8Array(t.nbytes);
    const fd = fs.openSync(p, 'r');
    try { readTensorBytes(fd, t, buf); } finally { fs.closeSync(fd); }
    const v = new Float32Array(buf.buffer);
    // norm weights are stored as 1+w: around 1 for a random model
    const mean = v.reduce((a, b) => a + b, 0) / v.length;
    expect(mean).toBeGreaterThan(0.5);
    expect(mean).toBeLessThan(1.5);
  });
});
