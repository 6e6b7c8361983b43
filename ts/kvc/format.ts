import * as zlib from 'node:zlib';
/**
 * The disk KV cache file (QuarkStar README, "Disk KV Cache"; docs/kv-disk.md):
 *   48-byte little-endian KVC header, the 32-byte model fingerprint (version 2), u32
 *   rendered-text length + UTF-8 text, the `Q36 ` session payload, and (extension bit 0) a KTM
 *   tool-id map section.
 * Every read is bounds-checked: a truncated or corrupted file is a KvcError, never a crash.
 * Version 2 added the fingerprint (a file of another model with the same shapes would otherwise
 * load and change answers) and made the CRC mandatory; version 1 files are skipped, not read.
 */
import { FINGERPRINT_BYTES } from '../model/fingerprint.js';

export const KVC_VERSION = 2;
export const HEADER_BYTES = 48;
/** where the text length sits: after the header and the fingerprint */
export const BODY_OFFSET = HEADER_BYTES + FINGERPRINT_BYTES;
export const SAVE_REASONS = ['unknown', 'cold', 'continued', 'evict', 'shutdown'] as const;
export type SaveReason = (typeof SAVE_REASONS)[number];

/**
 * Why a file cannot be used: `corrupt` (damaged or truncated: ours to delete), `foreign` (a valid
 * file of another model, or of another format version: left alone, other processes may use it).
 */
export type KvcProblem = 'corrupt' | 'foreign';

export class KvcError extends Error {
  constructor(problem: string, readonly kind: KvcProblem = 'corrupt') {
    super(problem);
    this.name = 'KvcError';
  }
}

/** Bytes 20..23 (reserved in the format) hold the file's CRC-32 (see checksum()). */
export const CRC_OFFSET = 20;

export interface KvcHeader {
  quantBits: number;
  reason: SaveReason;
  flags: number;
  tokens: number;
  hits: number;
  ctx: number;
  created: number;
  lastUsed: number;
  payloadBytes: number;
}

export interface KvcFile {
  header: KvcHeader;
  /** SHA-256 model fingerprint (ts/model/fingerprint.ts) */
  fingerprint: Buffer;
  text: string;
  payload: Uint8Array;
  /** tool id → the sampled assistant text after </think> (holds the exact <tool_call> blocks) */
  tools: Map<string, string>;
}

export function encodeHeader(h: KvcHeader): Buffer {
  const b = Buffer.alloc(HEADER_BYTES);
  b.write('KVC', 0, 'latin1');
  b[3] = KVC_VERSION;
  b[4] = h.quantBits;
  b[5] = Math.max(0, SAVE_REASONS.indexOf(h.reason));
  b[6] = h.flags;
  b.writeUInt32LE(h.tokens, 8);
  b.writeUInt32LE(h.hits, 12);
  b.writeUInt32LE(h.ctx, 16);
  b.writeBigUInt64LE(BigInt(h.created), 24);
  b.writeBigUInt64LE(BigInt(h.lastUsed), 32);
  b.writeBigUInt64LE(BigInt(h.payloadBytes), 40);
  return b;
}

export function decodeHeader(b: Buffer, fileSize: number): KvcHeader {
  if (b.length < HEADER_BYTES) throw new KvcError(`truncated header (${b.length} of ${HEADER_BYTES} bytes)`);
  if (b.toString('latin1', 0, 3) !== 'KVC') throw new KvcError('bad magic (not a KVC file)');
  if (b[3] !== KVC_VERSION) throw new KvcError(b[3] === 1 ? 'format version 1 (written before model fingerprints): re-created on the next save' : `unsupported format version ${b[3]}`, 'foreign');
  const payloadBytes = Number(b.readBigUInt64LE(40));
  if (payloadBytes > fileSize) throw new KvcError(`payload of ${payloadBytes} bytes is larger than the file`);
  return {
    quantBits: b[4], reason: SAVE_REASONS[b[5]] ?? 'unknown', flags: b[6], tokens: b.readUInt32LE(8), hits: b.readUInt32LE(12), ctx: b.readUInt32LE(16),
    created: Number(b.readBigUInt64LE(24)), lastUsed: Number(b.readBigUInt64LE(32)), payloadBytes,
  };
}

export function encodeFile(f: KvcFile): Buffer {
  const text = Buffer.from(f.text, 'utf8');
  const parts: Buffer[] = [];
  const flags = f.tools.size ? 1 : 0;
  const header = encodeHeader({ ...f.header, flags, payloadBytes: f.payload.byteLength });
  if (f.fingerprint.length !== FINGERPRINT_BYTES) throw new Error(`a model fingerprint is ${FINGERPRINT_BYTES} bytes, got ${f.fingerprint.length}`);
  parts.push(header, f.fingerprint);
  const tl = Buffer.alloc(4);
  tl.writeUInt32LE(text.length);
  parts.push(tl, text, Buffer.from(f.payload.buffer, f.payload.byteOffset, f.payload.byteLength));
  if (flags & 1) {
    const h = Buffer.alloc(8);
    h.write('KTM', 0, 'latin1');
    h[3] = 1;
    h.writeUInt32LE(f.tools.size, 4);
    parts.push(h);
    for (const [id, block] of f.tools) {
      const idb = Buffer.from(id, 'utf8'), bb = Buffer.from(block, 'utf8');
      const l = Buffer.alloc(8);
      l.writeUInt32LE(idb.length, 0);
      l.writeUInt32LE(bb.length, 4);
      parts.push(l, idb, bb);
    }
  }
  const out = Buffer.concat(parts);
  out.writeUInt32LE(checksum(out), CRC_OFFSET);
  return out;
}

/**
 * CRC-32 of the file with the fields that change in place zeroed: the hit count (12..15), the CRC
 * itself (20..23) and the last-used time (32..39). Everything else — the token count, ctx, reason,
 * flags, the fingerprint, text, payload and tool map — is covered. Never 0 (0 is stored as 1).
 */
export function checksum(file: Buffer): number {
  const h = Buffer.from(file.subarray(0, HEADER_BYTES));
  h.fill(0, 12, 16); h.fill(0, 20, 24); h.fill(0, 32, 40);
  return zlib.crc32(file.subarray(HEADER_BYTES), zlib.crc32(h)) || 1;
}

/**
 * The KTM tool-id map section starting at `at` of `b` (to the end of `b` at most), and where it
 * ends; every length checked against the bytes left.
 */
export function decodeToolMap(b: Buffer, at: number): { tools: Map<string, string>; end: number } {
  let o = at;
  const need = (n: number, what: string) => { if (o + n > b.length) throw new KvcError(`truncated: ${what} needs ${n} bytes at offset ${o}, ${b.length - o} left`); };
  const tools = new Map<string, string>();
  need(8, 'tool map header');
  if (b.toString('latin1', o, o + 3) !== 'KTM') throw new KvcError('bad tool map magic');
  if (b[o + 3] !== 1) throw new KvcError(`unsupported tool map version ${b[o + 3]}`);
  const count = b.readUInt32LE(o + 4); o += 8;
  for (let i = 0; i < count; i++) {
    need(8, `tool map entry ${i}`);
    const il = b.readUInt32LE(o), bl = b.readUInt32LE(o + 4); o += 8;
    need(il + bl, `tool map entry ${i}`);
    tools.set(b.toString('utf8', o, o + il), b.toString('utf8', o + il, o + il + bl));
    o += il + bl;
  }
  return { tools, end: o };
}

/** Parses a whole file (header, text, payload, tool map), checking every length against the bytes left. */
export function decodeFile(b: Buffer): KvcFile {
  const header = decodeHeader(b.subarray(0, HEADER_BYTES), b.length);
  const crc = b.readUInt32LE(CRC_OFFSET);
  if (checksum(b) !== crc) throw new KvcError(crc === 0 ? 'no checksum (the CRC field is 0)' : 'checksum mismatch (corrupted file)');
  let o = HEADER_BYTES;
  const need = (n: number, what: string) => { if (o + n > b.length) throw new KvcError(`truncated: ${what} needs ${n} bytes at offset ${o}, ${b.length - o} left`); };
  need(FINGERPRINT_BYTES, 'model fingerprint');
  const fingerprint = Buffer.from(b.subarray(o, o + FINGERPRINT_BYTES)); o += FINGERPRINT_BYTES;
  need(4, 'text length');
  const tlen = b.readUInt32LE(o); o += 4;
  need(tlen, 'rendered text');
  const text = b.toString('utf8', o, o + tlen); o += tlen;
  need(header.payloadBytes, 'session payload');
  const payload = new Uint8Array(b.subarray(o, o + header.payloadBytes)); o += header.payloadBytes;
  let tools = new Map<string, string>();
  if (header.flags & 1) ({ tools, end: o } = decodeToolMap(b, o));
  if (o !== b.length) throw new KvcError(`${b.length - o} unexpected bytes at the end`);
  return { header, fingerprint, text, payload, tools };
}
