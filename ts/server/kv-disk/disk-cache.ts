/**
 * The disk KV cache directory: files named <sha1 of the rendered byte prefix>.kv, written
 * atomically (temp file + rename), looked up by byte prefix, evicted least-recently-used to stay
 * within the space budget. Bad files are skipped with a logged reason; files that are ours (KVC
 * magic) but corrupt are deleted, anything else is left alone.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { HEADER_BYTES, KvcError, decodeFile, decodeHeader, encodeFile, encodeHeader, type KvcHeader, type SaveReason } from './format.js';

export interface DiskCacheOptions {
  dir: string;
  budgetBytes: number;
  log?: (msg: string) => void;
}

export interface CacheEntry {
  file: string;
  header: KvcHeader;
  text: string;
}

export class DiskCache {
  /** entries() results by file, valid while the file's inode, size and mtime are unchanged */
  private index = new Map<string, { ino: number; size: number; mtimeMs: number; entry: CacheEntry }>();

  constructor(readonly o: DiskCacheOptions) {
    fs.mkdirSync(o.dir, { recursive: true });
    // leftovers of a crash during a save are never valid files
    for (const f of fs.readdirSync(o.dir)) if (f.endsWith('.tmp')) fs.rmSync(path.join(o.dir, f), { force: true });
  }

  private log(msg: string): void {
    this.o.log?.(`kv-disk: ${msg}`);
  }

  static nameFor(text: string): string {
    return createHash('sha1').update(text, 'utf8').digest('hex') + '.kv';
  }

  save(o: { reason: SaveReason; text: string; payload: Uint8Array; tokens: number; ctx: number; tools?: Map<string, string> }): string {
    const now = Math.floor(Date.now() / 1000);
    const file = path.join(this.o.dir, DiskCache.nameFor(o.text));
    const bytes = encodeFile({
      header: { quantBits: 2, reason: o.reason, flags: 0, tokens: o.tokens, hits: 0, ctx: o.ctx, created: now, lastUsed: now, payloadBytes: o.payload.byteLength },
      text: o.text, payload: o.payload, tools: o.tools ?? new Map(),
    });
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    try {
      fs.writeSync(fd, bytes);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
    this.log(`saved ${path.basename(file)} (${o.reason}, ${o.tokens} tokens, ${bytes.length} bytes)`);
    this.enforceBudget(file);
    return file;
  }

  /**
   * Headers and texts of every readable file (payloads are not read). A file whose inode, size and
   * mtime are unchanged since the last call is served from memory, so a lookup per request costs
   * one readdir and a stat per file rather than re-reading every header and text.
   */
  entries(): CacheEntry[] {
    const out: CacheEntry[] = [];
    const seen = new Set<string>();
    for (const name of fs.readdirSync(this.o.dir)) {
      if (!name.endsWith('.kv')) continue;
      const file = path.join(this.o.dir, name);
      try {
        const st = fs.statSync(file);
        const known = this.index.get(file);
        if (known && known.ino === st.ino && known.size === st.size && known.mtimeMs === st.mtimeMs) {
          out.push(known.entry);
          seen.add(file);
          continue;
        }
        const entry = this.readEntry(file);
        this.index.set(file, { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, entry });
        out.push(entry);
        seen.add(file);
      } catch (e) {
        this.reject(file, (e as Error).message);
      }
    }
    for (const f of this.index.keys()) if (!seen.has(f)) this.index.delete(f);
    return out;
  }

  private readEntry(file: string): CacheEntry {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const hb = Buffer.alloc(Math.min(size, HEADER_BYTES + 4));
      fs.readSync(fd, hb, 0, hb.length, 0);
      const header = decodeHeader(hb.subarray(0, HEADER_BYTES), size);
      if (hb.length < HEADER_BYTES + 4) throw new KvcError('truncated before the text length');
      const tlen = hb.readUInt32LE(HEADER_BYTES);
      if (HEADER_BYTES + 4 + tlen + header.payloadBytes > size) throw new KvcError('truncated: text and payload run past the end of the file');
      const tb = Buffer.alloc(tlen);
      fs.readSync(fd, tb, 0, tlen, HEADER_BYTES + 4);
      return { file, header, text: tb.toString('utf8') };
    } finally {
      fs.closeSync(fd);
    }
  }

  private reject(file: string, why: string): void {
    this.index.delete(file);
    let ours = false;
    try { const b = Buffer.alloc(3); const fd = fs.openSync(file, 'r'); fs.readSync(fd, b, 0, 3, 0); fs.closeSync(fd); ours = b.toString('latin1') === 'KVC'; } catch { /* unreadable */ }
    this.log(`skipping ${path.basename(file)}: ${why}${ours ? ' (deleted: corrupt cache file)' : ''}`);
    if (ours) fs.rmSync(file, { force: true });
  }

  /** The longest cached text that is a byte prefix of `prompt` (at least minChars long). */
  lookup(prompt: string, minChars = 1): CacheEntry | undefined {
    let best: CacheEntry | undefined;
    for (const e of this.entries()) if (e.text.length >= minChars && prompt.startsWith(e.text) && (!best || e.text.length > best.text.length)) best = e;
    return best;
  }

  /** Reads and validates a whole file; bumps its hit count and last-used time. */
  load(file: string): ReturnType<typeof decodeFile> | undefined {
    try {
      const f = decodeFile(fs.readFileSync(file));
      f.header.hits++;
      f.header.lastUsed = Math.floor(Date.now() / 1000);
      const fd = fs.openSync(file, 'r+');
      // rewrite the counters only (the CRC in bytes 20..23 covers the body, not the header)
      const h = encodeHeader(f.header);
      try { fs.writeSync(fd, h, 8, 12, 8); fs.writeSync(fd, h, 24, 16, 24); } finally { fs.closeSync(fd); }
      return f;
    } catch (e) {
      this.reject(file, (e as Error).message);
      return undefined;
    }
  }

  /** Tool-id → sampled text entries found across all files (exact replay after a restart). */
  findTools(ids: string[]): Map<string, string> {
    const want = new Set(ids);
    const out = new Map<string, string>();
    if (!want.size) return out;
    for (const e of this.entries()) {
      if (!(e.header.flags & 1)) continue;
      try {
        const f = decodeFile(fs.readFileSync(e.file));
        for (const [id, block] of f.tools) if (want.has(id)) out.set(id, block);
      } catch (err) {
        this.reject(e.file, (err as Error).message);
      }
    }
    return out;
  }

  /** Deletes least-recently-used files until the directory fits the budget (never `keep`). */
  enforceBudget(keep?: string): void {
    const files = this.entries().map((e) => ({ ...e, size: fs.statSync(e.file).size })).sort((a, b) => a.header.lastUsed - b.header.lastUsed || a.header.created - b.header.created);
    let total = files.reduce((s, f) => s + f.size, 0);
    for (const f of files) {
      if (total <= this.o.budgetBytes) break;
      if (f.file === keep) continue;
      fs.rmSync(f.file, { force: true });
      total -= f.size;
      this.log(`evicted ${path.basename(f.file)} (least recently used)`);
    }
  }
}
