import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GgufError, GgmlType, kv, readGguf, writeGguf } from '../ts/gguf/index.js';
import { readModelShape, validateModel } from '../ts/model/shape.js';
import { fixture, tmpDir } from './helpers.js';

const dir = tmpDir();
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (bytes: Uint8Array | Buffer) => { const p = path.join(dir, `b${n++}.gguf`); fs.writeFileSync(p, bytes); return p; };

/** A small valid file to mutate: one KV, one F32 tensor of 8 values. */
function good(): Buffer {
  const p = path.join(dir, `good${n++}.gguf`);
  writeGguf(p, {
    metadata: [['general.architecture', kv.str('qwen35moe')]],
    tensors: [{ name: 'x', shape: [8], type: GgmlType.F32 }],
    fill: () => [new Uint8Array(32)],
  });
  return fs.readFileSync(p);
}

/** Header builder for hand-made broken files. */
function header(o: { magic?: number; version?: number; nTensors: bigint; nKv: bigint }): Buffer {
  const b = Buffer.alloc(24);
  b.writeUInt32LE(o.magic ?? 0x46554747, 0);
  b.writeUInt32LE(o.version ?? 3, 4);
  b.writeBigUInt64LE(o.nTensors, 8);
  b.writeBigUInt64LE(o.nKv, 16);
  return b;
}
const str = (s: string) => { const t = Buffer.from(s); const l = Buffer.alloc(8); l.writeBigUInt64LE(BigInt(t.length)); return Buffer.concat([l, t]); };
const u32 = (v: number) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); return b; };
const u64 = (v: bigint) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(v); return b; };

function expectError(p: string, pattern: RegExp) {
  const before = process.memoryUsage().rss;
  let err: unknown;
  try { readGguf(p); } catch (e) { err = e; }
  expect(err).toBeInstanceOf(GgufError);
  expect((err as Error).message).toMatch(pattern);
  expect((err as Error).message).toContain(p);
  // no unbounded allocation: RSS may not jump by hundreds of MB for a tiny file
  expect(process.memoryUsage().rss - before).toBeLessThan(200 * 2 ** 20);
}

describe('broken GGUF files give a clear error, no crash, no huge allocation', () => {
  it('the unmutated file reads fine', () => {
    expect(readGguf(file(good())).tensors[0].name).toBe('x');
  });
  it('1. wrong magic', () => { const b = good(); b.write('GGML', 0); expectError(file(b), /not a GGUF file: magic/); });
  it('2. empty / tiny file', () => expectError(file(Buffer.from('GGUF')), /not a GGUF file: only 4 bytes/));
  it('3. unsupported version', () => { const b = good(); b.writeUInt32LE(1, 4); expectError(file(b), /unsupported GGUF version 1/); });
  it('4. big-endian file', () => { const b = good(); b.writeUInt32LE(0x03000000, 4); expectError(file(b), /big-endian/); });
  it('5. truncated header', () => { const b = good(); expectError(file(b.subarray(0, 40)), /truncated/); });
  it('6. truncated tensor data', () => { const b = good(); expectError(file(b.subarray(0, b.length - 20)), /runs past the end of the file/); });
  it('7. absurd tensor count', () => expectError(file(Buffer.concat([header({ nTensors: 1n << 60n, nKv: 0n }), Buffer.alloc(64)])), /tensor count is \d+, more than the file can hold/));
  it('8. absurd metadata count', () => expectError(file(Buffer.concat([header({ nTensors: 0n, nKv: 0xffffffffffffn }), Buffer.alloc(64)])), /metadata count/));
  it('9. absurd string length', () => {
    const b = Buffer.concat([header({ nTensors: 0n, nKv: 1n }), u64(1n << 40n), Buffer.alloc(64)]);
    expectError(file(b), /metadata key #0 length is \d+, more than the file can hold/);
  });
  it('10. absurd array count', () => {
    const b = Buffer.concat([header({ nTensors: 0n, nKv: 1n }), str('a.b'), u32(9), u32(5), u64(1n << 50n), Buffer.alloc(64)]);
    expectError(file(b), /a\.b: array count is \d+, more than the file can hold/);
  });
  it('11. nested arrays', () => {
    const b = Buffer.concat([header({ nTensors: 0n, nKv: 1n }), str('a.b'), u32(9), u32(9), u64(1n), Buffer.alloc(64)]);
    expectError(file(b), /nested arrays/);
  });
  it('12. unknown metadata value type', () => {
    const b = Buffer.concat([header({ nTensors: 0n, nKv: 1n }), str('a.b'), u32(77), Buffer.alloc(64)]);
    expectError(file(b), /unknown value type id 77/);
  });
  it('13. unknown ggml tensor type', () => {
    const b = Buffer.concat([header({ nTensors: 1n, nKv: 0n }), str('w'), u32(1), u64(32n), u32(200), u64(0n), Buffer.alloc(128)]);
    expectError(file(b), /unknown ggml type id 200/);
  });
  it('14. tensor offset past the end', () => {
    const b = Buffer.concat([header({ nTensors: 1n, nKv: 0n }), str('w'), u32(1), u64(32n), u32(0), u64(1n << 40n), Buffer.alloc(128)]);
    expectError(file(b), /offset \d+ is past the end of the file/);
  });
  it('15. too many dimensions', () => {
    const b = Buffer.concat([header({ nTensors: 1n, nKv: 0n }), str('w'), u32(7), Buffer.alloc(128)]);
    expectError(file(b), /has 7 dimensions/);
  });
  it('16. row not a multiple of the block size', () => {
    const b = Buffer.concat([header({ nTensors: 1n, nKv: 0n }), str('w'), u32(1), u64(33n), u32(GgmlType.Q8_0), u64(0n), Buffer.alloc(128)]);
    expectError(file(b), /row length 33 is not a multiple of the Q8_0 block size 32/);
  });
  it('17. duplicate key', () => {
    const kvs = Buffer.concat([str('k'), u32(4), u32(1), str('k'), u32(4), u32(2)]);
    expectError(file(Buffer.concat([header({ nTensors: 0n, nKv: 2n }), kvs])), /duplicate metadata key "k"/);
  });
  it('18. alignment not a power of two', () => {
    const kvs = Buffer.concat([str('general.alignment'), u32(4), u32(24)]);
    expectError(file(Buffer.concat([header({ nTensors: 0n, nKv: 1n }), kvs, Buffer.alloc(16)])), /alignment 24 is not a power of two/);
  });
  it('19. non-contiguous tensor offsets (llama.cpp rejects them)', () => {
    const b = Buffer.concat([header({ nTensors: 1n, nKv: 0n }), str('w'), u32(1), u64(8n), u32(0), u64(64n), Buffer.alloc(256)]);
    expectError(file(b), /has offset 64, expected 0/);
  });
  it('20. missing file', () => expectError(path.join(dir, 'nope.gguf'), /cannot open/));
});

describe('model validation names the exact problem', () => {
  it('rejects a foreign architecture', () => {
    const p = path.join(dir, 'llama.gguf');
    writeGguf(p, { metadata: [['general.architecture', kv.str('llama')]], tensors: [], fill: () => [] });
    expect(() => readModelShape(readGguf(p))).toThrow(/architecture "llama" is not qwen35moe: QuarkStar runs Qwen3.6-35B-A3B only/);
  });
  it('reports a wrongly shaped and a missing tensor', () => {
    // Copy tinyA's metadata and tensors, but give one expert tensor the wrong shape and drop another.
    const src = readGguf(fixture('tinyA/tinyA-q8_0.gguf'));
    const fd = fs.openSync(src.path, 'r');
    const p = path.join(dir, 'bad-shape.gguf');
    try {
      const tensors = src.tensors.filter((t) => t.name !== 'blk.2.ssm_norm.weight').map((t) => ({
        name: t.name, type: t.type,
        shape: t.name === 'blk.1.ffn_gate_exps.weight' ? [t.shape[0], t.shape[1] / 2, t.shape[2] * 2] : t.shape,
      }));
      writeGguf(p, {
        metadata: [...src.metadata], tensors,
        fill: (t) => { const s = src.tensorByName.get(t.name)!; const b = Buffer.alloc(s.nbytes); fs.readSync(fd, b, 0, s.nbytes, s.offset); return [b]; },
      });
    } finally { fs.closeSync(fd); }
    const f = readGguf(p);
    expect(() => validateModel(f)).toThrow(/blk\.1\.ffn_gate_exps\.weight: expected \[256,256,6\], found \[256,128,12\]/);
    expect(() => validateModel(f)).toThrow(/blk\.2\.ssm_norm\.weight: missing/);
  });
});

describe('sparse files cannot make the reader hold what they claim (#45 item 11)', () => {
  it('a 2^30-string array in an 8 GiB sparse file is refused by its count, at once', () => {
    const p = path.join(tmpDir(), 'sparse.gguf');
    const h: Buffer[] = [Buffer.from('GGUF'), u32(3), u64(0n), u64(1n), u64(1n), Buffer.from('x'), u32(9), u32(8), u64(1n << 30n)];
    fs.writeFileSync(p, Buffer.concat(h));
    fs.truncateSync(p, 8 * 2 ** 30);
    const before = process.memoryUsage().rss;
    expect(() => readGguf(p)).toThrow(/x: array count is 1073741824, more than the file can hold \(limit 16777216\)/);
    expect(process.memoryUsage().rss - before).toBeLessThan(256 << 20);
  });
  it('nine 64 MiB arrays (each within the per-array bound) are refused by the metadata budget, memory bounded by it', () => {
    const p = path.join(tmpDir(), 'sparse3.gguf');
    const fd = fs.openSync(p, 'w');
    let at = 0;
    const put = (b: Buffer) => { fs.writeSync(fd, b, 0, b.length, at); at += b.length; };
    put(Buffer.concat([Buffer.from('GGUF'), u32(3), u64(0n), u64(9n)]));
    for (let i = 0; i < 9; i++) {
      put(Buffer.concat([u64(2n), Buffer.from(`a${i}`), u32(9), u32(4), u64(1n << 24n)]));
      at += 4 << 24; // 2^24 u32 zeros, left sparse
    }
    fs.closeSync(fd);
    fs.truncateSync(p, at + 4096);
    const before = process.memoryUsage().rss;
    expect(() => readGguf(p)).toThrow(/the metadata runs past 512 MiB/);
    // what was held before the refusal is bounded by the budget, not by the 576 MiB the file claims
    expect(process.memoryUsage().rss - before).toBeLessThan(900 << 20);
  });
  it('a 1 GiB string is refused by its length', () => {
    const p = path.join(tmpDir(), 'sparse2.gguf');
    fs.writeFileSync(p, Buffer.concat([Buffer.from('GGUF'), u32(3), u64(0n), u64(1n), u64(1n), Buffer.from('x'), u32(8), u64(1n << 30n)]));
    fs.truncateSync(p, 2 * 2 ** 30);
    expect(() => readGguf(p)).toThrow(/x length is 1073741824, more than the file can hold/);
  });
});

