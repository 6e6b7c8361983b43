/**
 * A model's identity for saved state: two files give the same KV and recurrent state for the same
 * tokens only when they hold the same weights. Shapes are not enough (the q2 and q2-q4 recipes,
 * a re-quantization, two synthetic models with other seeds share every shape), so the
 * fingerprint is SHA-256 over
 *   - every byte before the tensor data (GGUF header, metadata, tensor-info table: names, types,
 *     shapes, offsets), and
 *   - a sample of every tensor's bytes: its first and last 4 KiB (weights that differ anywhere
 *     in practice differ there: quantization scales are spread through every block).
 * That reads ~8 KiB per tensor (a few MB for the real model) instead of 11 GB, so it is computed
 * at load; it is memoized by path, size and mtime within the process.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { readGguf, typeInfo, type GgufFile } from '../gguf/index.js';

export const FINGERPRINT_BYTES = 32;
const SAMPLE = 4096;

export interface ModelIdentity {
  /** SHA-256, 32 bytes */
  fingerprint: Buffer;
  /** bits per weight of the routed experts (the KVC header's informational "quant bits" byte) */
  expertBits: number;
}

const memo = new Map<string, ModelIdentity>();

export function modelIdentity(path: string, file?: GgufFile): ModelIdentity {
  const st = fs.statSync(path);
  const key = `${path}\0${st.size}\0${st.mtimeMs}`;
  const known = memo.get(key);
  if (known) return known;
  const g = file ?? readGguf(path);
  const h = createHash('sha256');
  const fd = fs.openSync(path, 'r');
  try {
    const read = (pos: number, n: number) => {
      const b = Buffer.alloc(n);
      let got = 0;
      while (got < n) {
        const k = fs.readSync(fd, b, got, n - got, pos + got);
        if (k === 0) break;
        got += k;
      }
      return b.subarray(0, got);
    };
    for (let pos = 0; pos < g.dataStart; pos += 1 << 20) h.update(read(pos, Math.min(1 << 20, g.dataStart - pos)));
    for (const t of g.tensors) {
      if (t.nbytes <= 2 * SAMPLE) h.update(read(t.offset, t.nbytes));
      else { h.update(read(t.offset, SAMPLE)); h.update(read(t.offset + t.nbytes - SAMPLE, SAMPLE)); }
    }
  } finally {
    fs.closeSync(fd);
  }
  const experts = g.tensors.find((t) => t.name.endsWith('.ffn_gate_exps.weight'));
  const info = experts ? typeInfo(experts.type) : undefined;
  const id: ModelIdentity = { fingerprint: h.digest(), expertBits: info ? Math.floor((8 * info.blockBytes) / info.blockElems) : 0 };
  memo.set(key, id);
  return id;
}
