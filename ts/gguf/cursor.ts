import * as fs from 'node:fs';
import { GgufError } from './errors.js';

const CHUNK = 1 << 20;

/**
 * Sequential little-endian reads over a file descriptor through a 1 MiB window, so the header
 * (which can be tens of MB with tokenizer arrays) is parsed without reading tensor data.
 * Every read checks the file size first: a truncated file is an error, never a short read.
 */
export class FileCursor {
  private buf = Buffer.alloc(CHUNK);
  private bufStart = 0;
  private bufLen = 0;
  pos = 0;

  constructor(private readonly fd: number, readonly fileSize: number, private readonly file: string) {}

  get remaining(): number {
    return this.fileSize - this.pos;
  }

  fail(problem: string): never {
    throw new GgufError(this.file, problem);
  }

  /** Makes bytes [pos, pos+n) available in the window and returns their offset inside it. */
  private ensure(n: number, what: string): number {
    if (n > this.remaining) this.fail(`truncated: ${what} needs ${n} bytes at offset ${this.pos}, file has ${this.remaining} left`);
    if (this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.bufLen) return this.pos - this.bufStart;
    if (n > this.buf.length) this.buf = Buffer.alloc(n);
    const want = Math.min(this.buf.length, this.remaining);
    let got = 0;
    while (got < want) {
      const r = fs.readSync(this.fd, this.buf, got, want - got, this.pos + got);
      if (r <= 0) this.fail(`read error at offset ${this.pos + got}`);
      got += r;
    }
    this.bufStart = this.pos;
    this.bufLen = got;
    return 0;
  }

  u8(what: string): number { const o = this.ensure(1, what); this.pos += 1; return this.buf[o]; }
  i8(what: string): number { const o = this.ensure(1, what); this.pos += 1; return this.buf.readInt8(o); }
  u16(what: string): number { const o = this.ensure(2, what); this.pos += 2; return this.buf.readUInt16LE(o); }
  i16(what: string): number { const o = this.ensure(2, what); this.pos += 2; return this.buf.readInt16LE(o); }
  u32(what: string): number { const o = this.ensure(4, what); this.pos += 4; return this.buf.readUInt32LE(o); }
  i32(what: string): number { const o = this.ensure(4, what); this.pos += 4; return this.buf.readInt32LE(o); }
  f32(what: string): number { const o = this.ensure(4, what); this.pos += 4; return this.buf.readFloatLE(o); }
  f64(what: string): number { const o = this.ensure(8, what); this.pos += 8; return this.buf.readDoubleLE(o); }
  u64(what: string): bigint { const o = this.ensure(8, what); this.pos += 8; return this.buf.readBigUInt64LE(o); }
  i64(what: string): bigint { const o = this.ensure(8, what); this.pos += 8; return this.buf.readBigInt64LE(o); }

  /** A u64 that must fit a JS number and not exceed `max` (so it can size an allocation). */
  count(what: string, max: number): number {
    const v = this.u64(what);
    if (v > BigInt(max)) this.fail(`${what} is ${v}, more than the file can hold (limit ${max}): truncated or corrupt`);
    return Number(v);
  }

  /** Raw bytes copied out of the window (n already bounded by the caller). */
  bytes(n: number, what: string): Buffer {
    const o = this.ensure(n, what);
    this.pos += n;
    return Buffer.from(this.buf.subarray(o, o + n));
  }

  /** GGUF string: u64 length + UTF-8 bytes. Limited to 1 GiB (gguf.cpp) and to the bytes left. */
  string(what: string): string {
    const n = this.count(`${what} length`, Math.max(0, Math.min(this.remaining - 8, 1 << 26)));
    if (n === 0) return '';
    const o = this.ensure(n, what);
    this.pos += n;
    return this.buf.toString('utf8', o, o + n);
  }
}
