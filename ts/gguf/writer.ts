import * as fs from 'node:fs';
import { rowBytes, typeInfo } from './ggml-types.js';
import { GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC } from './reader.js';
import { GgufValueType, type GgufValue } from './value-types.js';
import { createTemp, writeAll } from '../safe-file.js';

export interface TensorSpec {
  name: string;
  shape: number[];
  type: number;
}

/** Produces a tensor's bytes in order, in chunks of any size (bounded memory for huge tensors). */
export type TensorFill = (t: TensorSpec, index: number) => Iterable<Uint8Array>;

export interface WriteGgufOptions {
  metadata: [string, GgufValue][];
  tensors: TensorSpec[];
  fill: TensorFill;
  alignment?: number;
  version?: 2 | 3;
}

/** Growable little-endian byte builder for the header. */
class Bytes {
  private buf = Buffer.alloc(1 << 16);
  len = 0;
  private room(n: number): number {
    if (this.len + n > this.buf.length) {
      const nb = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
      this.buf.copy(nb, 0, 0, this.len);
      this.buf = nb;
    }
    const o = this.len;
    this.len += n;
    return o;
  }
  // room() may replace this.buf, so take the offset before touching the buffer.
  u8(v: number) { const o = this.room(1); this.buf[o] = v; }
  i8(v: number) { const o = this.room(1); this.buf.writeInt8(v, o); }
  u16(v: number) { const o = this.room(2); this.buf.writeUInt16LE(v, o); }
  i16(v: number) { const o = this.room(2); this.buf.writeInt16LE(v, o); }
  u32(v: number) { const o = this.room(4); this.buf.writeUInt32LE(v >>> 0, o); }
  i32(v: number) { const o = this.room(4); this.buf.writeInt32LE(v, o); }
  f32(v: number) { const o = this.room(4); this.buf.writeFloatLE(v, o); }
  f64(v: number) { const o = this.room(8); this.buf.writeDoubleLE(v, o); }
  u64(v: number | bigint) { const o = this.room(8); this.buf.writeBigUInt64LE(BigInt(v), o); }
  i64(v: number | bigint) { const o = this.room(8); this.buf.writeBigInt64LE(BigInt(v), o); }
  str(s: string) { const b = Buffer.from(s, 'utf8'); this.u64(b.length); const o = this.room(b.length); b.copy(this.buf, o); }
  pad(alignment: number) { while (this.len % alignment) this.u8(0); }
  bytes(): Buffer { return this.buf.subarray(0, this.len); }
}

function writeScalar(b: Bytes, type: GgufValueType, v: unknown): void {
  switch (type) {
    case GgufValueType.UINT8: b.u8(v as number); break;
    case GgufValueType.INT8: b.i8(v as number); break;
    case GgufValueType.UINT16: b.u16(v as number); break;
    case GgufValueType.INT16: b.i16(v as number); break;
    case GgufValueType.UINT32: b.u32(v as number); break;
    case GgufValueType.INT32: b.i32(v as number); break;
    case GgufValueType.FLOAT32: b.f32(v as number); break;
    case GgufValueType.BOOL: b.u8(v ? 1 : 0); break;
    case GgufValueType.STRING: b.str(v as string); break;
    case GgufValueType.UINT64: b.u64(v as bigint); break;
    case GgufValueType.INT64: b.i64(v as bigint); break;
    case GgufValueType.FLOAT64: b.f64(v as number); break;
    default: throw new Error(`cannot write GGUF value type ${type}`);
  }
}

export function tensorBytes(t: TensorSpec): number {
  let rows = 1;
  for (let d = 1; d < t.shape.length; d++) rows *= t.shape[d];
  return rowBytes(t.type, t.shape[0]) * rows;
}

/**
 * Writes a GGUF file the way llama.cpp requires: tensors contiguous in info order, each padded to
 * the alignment (the last one too). `fill` streams each tensor's bytes; their total must match the
 * tensor's size exactly. Writes to a fresh `path.<random>.tmp` (safe-file.ts) and renames, so a crash never leaves a half file.
 */
/** The header and tensor directory of a GGUF file, and each tensor's size in bytes (unpadded). */
export function ggufHeader(o: Omit<WriteGgufOptions, 'fill'>): { header: Buffer; sizes: number[]; alignment: number } {
  const alignment = o.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  const h = new Bytes();
  h.u32(GGUF_MAGIC);
  h.u32(o.version ?? 3);
  h.u64(o.tensors.length);
  const meta = o.metadata.filter(([k]) => k !== 'general.alignment');
  if (alignment !== GGUF_DEFAULT_ALIGNMENT) meta.unshift(['general.alignment', { type: GgufValueType.UINT32, value: alignment }]);
  h.u64(meta.length);
  const keys = new Set<string>();
  for (const [key, v] of meta) {
    if (!key) throw new Error('empty metadata key');
    if (keys.has(key)) throw new Error(`duplicate metadata key "${key}"`);
    keys.add(key);
    h.str(key);
    h.u32(v.type);
    if (v.type === GgufValueType.ARRAY) {
      h.u32(v.elemType);
      h.u64(v.value.length);
      for (const e of v.value as Iterable<unknown>) writeScalar(h, v.elemType, e);
    } else writeScalar(h, v.type, v.value);
  }
  let offset = 0;
  const sizes: number[] = [];
  for (const t of o.tensors) {
    if (!typeInfo(t.type)) throw new Error(`${t.name}: unknown ggml type ${t.type}`);
    const n = tensorBytes(t);
    sizes.push(n);
    h.str(t.name);
    h.u32(t.shape.length);
    for (const ne of t.shape) h.u64(ne);
    h.u32(t.type);
    h.u64(offset);
    offset += Math.ceil(n / alignment) * alignment;
  }
  if (o.tensors.length > 0) h.pad(alignment);
  return { header: h.bytes(), sizes, alignment };
}

export function writeGguf(path: string, o: WriteGgufOptions): { bytes: number } {
  const { header, sizes, alignment } = ggufHeader(o);
  const { fd, tmp } = createTemp(path);
  let pos = 0;
  const put = (b: Uint8Array) => {
    writeAll(fd, b, pos);
    pos += b.byteLength;
  };
  try {
    put(header);
    const zeros = new Uint8Array(alignment);
    o.tensors.forEach((t, i) => {
      let n = 0;
      for (const chunk of o.fill(t, i)) {
        n += chunk.byteLength;
        if (n > sizes[i]) throw new Error(`${t.name}: fill produced more than ${sizes[i]} bytes`);
        put(chunk);
      }
      if (n !== sizes[i]) throw new Error(`${t.name}: fill produced ${n} bytes, expected ${sizes[i]}`);
      const padN = (alignment - (n % alignment)) % alignment;
      if (padN) put(zeros.subarray(0, padN));
    });
    fs.closeSync(fd);
  } catch (e) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  fs.renameSync(tmp, path);
  return { bytes: pos };
}
