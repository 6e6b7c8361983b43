/**
 * The quant oracle files (fixtures/quant/<type>.bin, from ../shared/oracle/quant): "QORC", u32
 * ggml type id, u32 elements per block, u32 bytes per block, u32 block count; the raw blocks;
 * then every block's values as f32 (gguf-py's reference dequantization).
 */
import * as fs from 'node:fs';

export interface QuantOracle {
  magic: string;
  type: number;
  elems: number;
  bytes: number;
  nBlocks: number;
  /** the raw blocks, nBlocks × bytes */
  raw: Uint8Array;
  /** the decoded values as f32 bit patterns, nBlocks × elems */
  vals: Uint32Array;
  /** block i's bytes (a view) */
  block(i: number): Uint8Array;
}

export function readQuantOracle(file: string): QuantOracle {
  const b = fs.readFileSync(file);
  const type = b.readUInt32LE(4), elems = b.readUInt32LE(8), bytes = b.readUInt32LE(12), nBlocks = b.readUInt32LE(16);
  const raw = new Uint8Array(b.buffer, b.byteOffset + 20, bytes * nBlocks).slice();
  const at = 20 + bytes * nBlocks;
  const vals = new Uint32Array(b.buffer.slice(b.byteOffset + at, b.byteOffset + at + 4 * elems * nBlocks));
  return { magic: b.toString('latin1', 0, 4), type, elems, bytes, nBlocks, raw, vals, block: (i) => raw.subarray(i * bytes, (i + 1) * bytes) };
}
