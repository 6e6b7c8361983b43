/**
 * attn_mmc's decoded operands (shaders/attn_decode.comp, layouts: ts/engine/vulkan/attn-decoded.ts)
 * built on the host from the bench's Q and random q8_0 / q4_0 cache rows: Q's rows grouped by KV
 * head as f16 hi and lo, K's integers as f16 and its scales as f32, V as f16 hi and lo. Split as
 * the decode pass splits (hi: the first 11 significant bits by mask; lo: the rest times 2^11,
 * rounded to nearest), so bench-attn-tile --decode can require the GPU's buffers bit for bit.
 */
import { f16ToF32, f32ToF16 } from '../../ts/model/f16.js';
import { ATTN_DECODED_PAD_ROWS, attnDecodedLayout, type AttnDecodedShape } from '../../ts/engine/vulkan/attn-decoded.js';
import type { VkDevice } from '../../ts/vk/addon.js';

const LO = 2048;
const f = new Float32Array(1), u = new Uint32Array(f.buffer);
/** v's first 11 significant bits (attn_decode's hiOf) */
function hiOf(v: number): number {
  f[0] = v;
  u[0] &= 0xffffe000;
  return f[0];
}

export interface AttnDecoded {
  q: number; k: number; v: number;
  /** push fields the kernel reads in place of kRowBytes / vRowBytes: word offsets of K's scales and V's lo halves */
  kScales: number; vLo: number;
  free(): void;
}

/**
 * qg: the bench's Q rows (tokens × qStride f32, head h's Q at h·2·hd); kChunk / vChunk: q8_0 / q4_0
 * rows that repeat every `rows` positions (randomCacheRows).
 */
export function attnDecoded(dev: VkDevice, s: AttnDecodedShape, qg: Float32Array, kChunk: Uint8Array, vChunk: Uint8Array, rows: number): AttnDecoded {
  const { nHead, nHeadKv, hd, tokens: T, ctx } = s;
  const G = nHead / nHeadKv, kvDim = nHeadKv * hd, qStride = 2 * nHead * hd;
  // Q: (T·nHead + 64) rows of hd halves, hi then lo (the padding rows left 0)
  const qRows = T * nHead + ATTN_DECODED_PAD_ROWS, qh = new Uint16Array(2 * qRows * hd);
  for (let kvh = 0; kvh < nHeadKv; kvh++) for (let t = 0; t < T; t++) for (let g = 0; g < G; g++) {
    const row = (kvh * T + t) * G + g, src = t * qStride + (kvh * G + g) * 2 * hd;
    for (let d = 0; d < hd; d++) {
      const x = qg[src + d], h = hiOf(x);
      qh[row * hd + d] = f32ToF16(h);
      qh[(qRows + row) * hd + d] = f32ToF16(Math.fround((x - h) * LO));
    }
  }
  // K (q8_0: 34-byte blocks of an f16 scale and 32 int8) and V (q4_0: 18-byte blocks, nibbles)
  const nb = kvDim / 32, kq = new Uint16Array(rows * kvDim), ks = new Float32Array(rows * nb);
  const vh = new Uint16Array(rows * kvDim), vl = new Uint16Array(rows * kvDim);
  const kdv = new DataView(kChunk.buffer, kChunk.byteOffset, kChunk.byteLength), vdv = new DataView(vChunk.buffer, vChunk.byteOffset, vChunk.byteLength);
  for (let r = 0; r < rows; r++) for (let bI = 0; bI < nb; bI++) {
    const ko = (r * nb + bI) * 34, vo = (r * nb + bI) * 18;
    ks[r * nb + bI] = f16ToF32(kdv.getUint16(ko, true));
    const vs = f16ToF32(vdv.getUint16(vo, true));
    for (let e = 0; e < 32; e++) {
      const i = r * kvDim + bI * 32 + e;
      kq[i] = f32ToF16(kdv.getInt8(ko + 2 + e));
      const byte = vChunk[vo + 2 + (e & 15)], q = e < 16 ? byte & 15 : byte >> 4;
      const x = Math.fround(vs * (q - 8)), h = hiOf(x);
      vh[i] = f32ToF16(h);
      vl[i] = f32ToF16(Math.fround((x - h) * LO));
    }
  }
  const L = attnDecodedLayout(s), half = 4 * L.kScales, { kScales, vLo } = L;
  const q = dev.createBuffer(L.qBytes, false), k = dev.createBuffer(L.kBytes, false), v = dev.createBuffer(L.vBytes, false);
  dev.write(q, 0, new Uint8Array(qh.buffer));
  for (let p = 0; p < ctx; p += rows) {
    const n = Math.min(rows, ctx - p);
    const part = (a: Uint16Array | Float32Array, per: number) => new Uint8Array(a.buffer, 0, n * per * a.BYTES_PER_ELEMENT);
    dev.write(k, p * kvDim * 2, part(kq, kvDim));
    dev.write(k, half + p * nb * 4, part(ks, nb));
    dev.write(v, p * kvDim * 2, part(vh, kvDim));
    dev.write(v, half + p * kvDim * 2, part(vl, kvDim));
  }
  return { q, k, v, kScales, vLo, free: () => { for (const b of [q, k, v]) dev.freeBuffer(b); } };
}
