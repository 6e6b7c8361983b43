import * as fs from 'node:fs';
import { FileCursor } from './cursor.js';
import { GgufError } from './errors.js';
import { typeInfo, typeName } from './ggml-types.js';
import { GgufValueType, SCALAR_SIZE, valueTypeName, type GgufArray, type GgufValue } from './value-types.js';

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as u32le
export const GGUF_DEFAULT_ALIGNMENT = 32;
const MAX_DIMS = 4;
const MAX_NAME = 64; // gguf.cpp: name length < GGML_MAX_NAME
/**
 * Elements of one metadata array, and bytes of the whole metadata, that a reader holds at most:
 * the model's largest arrays (the 248,320-token vocabulary, its merges) are far below both. A
 * bound by the file's size alone let a sparse file claim 2^30 strings and run V8 out of heap.
 */
const MAX_ARRAY = 1 << 24;
export const MAX_METADATA_BYTES = 512 << 20;

export interface TensorInfo {
  name: string;
  /** ne[0..n_dims): ne[0] is the contiguous (row) dimension */
  shape: number[];
  type: number;
  /** offset relative to the data section, as stored */
  relOffset: number;
  /** absolute file offset of the first byte */
  offset: number;
  nbytes: number;
  /** elements per row (= shape[0]) and rows (product of the other dims) */
  rowElems: number;
  rows: number;
  rowBytes: number;
}

export interface GgufFile {
  path: string;
  version: number;
  fileSize: number;
  alignment: number;
  dataStart: number;
  metadata: Map<string, GgufValue>;
  tensors: TensorInfo[];
  tensorByName: Map<string, TensorInfo>;
}

function readArray(c: FileCursor, key: string): GgufValue {
  const elemType = c.u32(`${key}: array element type`);
  if (elemType === GgufValueType.ARRAY) c.fail(`${key}: nested arrays are not supported (gguf.cpp rejects them)`);
  if (!(elemType in GgufValueType)) c.fail(`${key}: unknown array element type id ${elemType}`);
  const elemSize = SCALAR_SIZE[elemType as GgufValueType] ?? 8; // a string needs at least its 8-byte length
  const n = c.count(`${key}: array count`, Math.min(MAX_ARRAY, Math.floor(Math.max(0, c.remaining - 8) / elemSize)));
  const what = `${key}[]`;
  let value: GgufArray;
  switch (elemType as GgufValueType) {
    case GgufValueType.UINT8: value = new Uint8Array(c.bytes(n, what)); break;
    case GgufValueType.INT8: value = Int8Array.from(c.bytes(n, what), (b) => (b << 24) >> 24); break;
    case GgufValueType.BOOL: value = Array.from(c.bytes(n, what), (b) => b !== 0); break;
    case GgufValueType.STRING: { const a: string[] = new Array(n); for (let i = 0; i < n; i++) a[i] = c.string(what); value = a; break; }
    default: {
      const raw = c.bytes(n * elemSize, what);
      const ab = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
      switch (elemType as GgufValueType) {
        case GgufValueType.UINT16: value = new Uint16Array(ab); break;
        case GgufValueType.INT16: value = new Int16Array(ab); break;
        case GgufValueType.UINT32: value = new Uint32Array(ab); break;
        case GgufValueType.INT32: value = new Int32Array(ab); break;
        case GgufValueType.FLOAT32: value = new Float32Array(ab); break;
        case GgufValueType.FLOAT64: value = new Float64Array(ab); break;
        case GgufValueType.UINT64: value = new BigUint64Array(ab); break;
        case GgufValueType.INT64: value = new BigInt64Array(ab); break;
        default: c.fail(`${key}: unknown array element type id ${elemType}`);
      }
    }
  }
  if (c.pos > MAX_METADATA_BYTES) c.fail(`${key}: the metadata runs past ${MAX_METADATA_BYTES >> 20} MiB, more than any model file of this architecture holds`);
  return { type: GgufValueType.ARRAY, elemType: elemType as Exclude<GgufValueType, GgufValueType.ARRAY>, value };
}

function readValue(c: FileCursor, key: string, type: number): GgufValue {
  switch (type) {
    case GgufValueType.UINT8: return { type, value: c.u8(key) };
    case GgufValueType.INT8: return { type, value: c.i8(key) };
    case GgufValueType.UINT16: return { type, value: c.u16(key) };
    case GgufValueType.INT16: return { type, value: c.i16(key) };
    case GgufValueType.UINT32: return { type, value: c.u32(key) };
    case GgufValueType.INT32: return { type, value: c.i32(key) };
    case GgufValueType.FLOAT32: return { type, value: c.f32(key) };
    case GgufValueType.BOOL: return { type, value: c.u8(key) !== 0 };
    case GgufValueType.STRING: return { type, value: c.string(key) };
    case GgufValueType.UINT64: return { type, value: c.u64(key) };
    case GgufValueType.INT64: return { type, value: c.i64(key) };
    case GgufValueType.FLOAT64: return { type, value: c.f64(key) };
    case GgufValueType.ARRAY: return readArray(c, key);
    default: return c.fail(`metadata key "${key}" has unknown value type id ${type}`);
  }
}

/**
 * Parses a GGUF v2/v3 header and tensor directory. Tensor data is not read; use
 * `readTensorBytes`. All counts are bounded by the file size before anything is allocated.
 */
export function readGguf(path: string): GgufFile {
  let fd: number;
  try {
    fd = fs.openSync(path, 'r');
  } catch (e) {
    throw new GgufError(path, `cannot open: ${(e as Error).message}`);
  }
  try {
    const fileSize = fs.fstatSync(fd).size;
    const c = new FileCursor(fd, fileSize, path);
    if (fileSize < 24) c.fail(`not a GGUF file: only ${fileSize} bytes`);
    const magic = c.u32('magic');
    if (magic !== GGUF_MAGIC) c.fail(`not a GGUF file: magic is 0x${magic.toString(16).padStart(8, '0')}, expected "GGUF"`);
    const version = c.u32('version');
    if ((version & 0xffff) === 0 && version !== 0) c.fail(`big-endian GGUF (version field 0x${version.toString(16)}) is not supported`);
    if (version !== 2 && version !== 3) c.fail(`unsupported GGUF version ${version} (2 and 3 are supported)`);
    // Each KV record is at least 13 bytes, each tensor info at least 33: counts above that are lies.
    const nTensors = c.count('tensor count', Math.floor(fileSize / 33));
    const nKv = c.count('metadata count', Math.floor(fileSize / 13));

    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < nKv; i++) {
      const key = c.string(`metadata key #${i}`);
      if (key.length === 0) c.fail(`metadata key #${i} is empty`);
      if (metadata.has(key)) c.fail(`duplicate metadata key "${key}"`);
      const type = c.u32(`${key}: value type`);
      if (!(type in GgufValueType)) c.fail(`metadata key "${key}" has unknown value type id ${type}`);
      metadata.set(key, readValue(c, key, type));
    }

    let alignment = GGUF_DEFAULT_ALIGNMENT;
    const al = metadata.get('general.alignment');
    if (al) {
      if (al.type !== GgufValueType.UINT32) c.fail(`general.alignment must be UINT32, found ${valueTypeName(al.type)}`);
      const a = al.value as number;
      if (a === 0 || (a & (a - 1)) !== 0) c.fail(`general.alignment ${a} is not a power of two`);
      alignment = a;
    }

    const raw: { name: string; shape: number[]; type: number; relOffset: number }[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < nTensors; i++) {
      const name = c.string(`tensor #${i} name`);
      if (Buffer.byteLength(name) >= MAX_NAME) c.fail(`tensor #${i} name "${name.slice(0, 80)}" is ${Buffer.byteLength(name)} bytes (limit ${MAX_NAME - 1})`);
      if (seen.has(name)) c.fail(`duplicate tensor name "${name}"`);
      seen.add(name);
      const nDims = c.u32(`${name}: n_dims`);
      if (nDims < 1 || nDims > MAX_DIMS) c.fail(`tensor "${name}" has ${nDims} dimensions (1..${MAX_DIMS} allowed)`);
      const shape: number[] = [];
      for (let d = 0; d < nDims; d++) {
        const ne = c.u64(`${name}: ne[${d}]`);
        if (ne > BigInt(Number.MAX_SAFE_INTEGER)) c.fail(`tensor "${name}" ne[${d}] = ${ne} is absurd`);
        shape.push(Number(ne));
      }
      const type = c.u32(`${name}: type`);
      const relOffset = c.u64(`${name}: offset`);
      if (relOffset > BigInt(fileSize)) c.fail(`tensor "${name}" offset ${relOffset} is past the end of the file (${fileSize} bytes)`);
      raw.push({ name, shape, type, relOffset: Number(relOffset) });
    }
    const dataStart = nTensors > 0 ? Math.ceil(c.pos / alignment) * alignment : c.pos;

    const tensors: TensorInfo[] = [];
    let expected = 0;
    for (const r of raw) {
      const ti = typeInfo(r.type);
      if (!ti) return c.fail(`tensor "${r.name}" has unknown ggml type id ${r.type}`);
      const rowElems = r.shape[0];
      if (rowElems % ti.blockElems !== 0) c.fail(`tensor "${r.name}": row length ${rowElems} is not a multiple of the ${ti.name} block size ${ti.blockElems}`);
      let rows = 1;
      for (let d = 1; d < r.shape.length; d++) rows *= r.shape[d];
      const rowBytes = (rowElems / ti.blockElems) * ti.blockBytes;
      const nbytes = rowBytes * rows;
      if (!Number.isSafeInteger(nbytes)) c.fail(`tensor "${r.name}" size overflows (shape [${r.shape.join(',')}])`);
      if (r.relOffset % alignment !== 0) c.fail(`tensor "${r.name}" offset ${r.relOffset} is not a multiple of the alignment ${alignment}`);
      if (r.relOffset !== expected) c.fail(`tensor "${r.name}" has offset ${r.relOffset}, expected ${expected} (tensors must be contiguous in info order)`);
      const offset = dataStart + r.relOffset;
      if (offset + nbytes > fileSize) c.fail(`tensor "${r.name}" (${typeName(r.type)} [${r.shape.join(',')}], ${nbytes} bytes at ${offset}) runs past the end of the file (${fileSize} bytes): truncated?`);
      tensors.push({ name: r.name, shape: r.shape, type: r.type, relOffset: r.relOffset, offset, nbytes, rowElems, rows, rowBytes });
      expected = r.relOffset + Math.ceil(nbytes / alignment) * alignment;
    }
    return { path, version, fileSize, alignment, dataStart, metadata, tensors, tensorByName: new Map(tensors.map((t) => [t.name, t])) };
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads `len` bytes of a tensor starting at byte `start` into `dst` (defaults: whole tensor). */
export function readTensorBytes(fd: number, t: TensorInfo, dst: Uint8Array, start = 0, len = t.nbytes - start): void {
  if (start < 0 || len < 0 || start + len > t.nbytes) throw new RangeError(`${t.name}: byte range ${start}+${len} outside tensor of ${t.nbytes} bytes`);
  if (dst.byteLength < len) throw new RangeError(`${t.name}: destination holds ${dst.byteLength} bytes, need ${len}`);
  let got = 0;
  while (got < len) {
    const r = fs.readSync(fd, dst, got, len - got, t.offset + start + got);
    if (r <= 0) throw new Error(`${t.name}: short read at byte ${start + got} (file truncated?)`);
    got += r;
  }
}

/** Typed metadata accessors with errors that name the key. */
export function metaNumber(f: GgufFile, key: string, fallback?: number): number {
  const v = f.metadata.get(key);
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new GgufError(f.path, `missing metadata key "${key}"`);
  }
  if (v.type === GgufValueType.ARRAY || v.type === GgufValueType.STRING || v.type === GgufValueType.BOOL) {
    throw new GgufError(f.path, `metadata key "${key}" must be a number, found ${valueTypeName(v.type)}`);
  }
  return Number(v.value);
}

export function metaString(f: GgufFile, key: string, fallback?: string): string {
  const v = f.metadata.get(key);
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new GgufError(f.path, `missing metadata key "${key}"`);
  }
  if (v.type !== GgufValueType.STRING) throw new GgufError(f.path, `metadata key "${key}" must be a string, found ${valueTypeName(v.type)}`);
  return v.value as string;
}

export function metaArray(f: GgufFile, key: string): GgufArray | undefined {
  const v = f.metadata.get(key);
  if (v === undefined) return undefined;
  if (v.type !== GgufValueType.ARRAY) throw new GgufError(f.path, `metadata key "${key}" must be an array, found ${valueTypeName(v.type)}`);
  return v.value;
}
