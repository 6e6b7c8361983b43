/**
 * The disk KV cache directory: files named <sha1 of the rendered byte prefix>.kv, written
 * atomically (temp file + rename), looked up by byte prefix, evicted least-recently-used to stay
 * within the space budget. Only files of this model (same fingerprint) are candidates. Bad files
 * are skipped with a logged reason (once per version of the file); files that are ours (KVC magic)
 * but corrupt are deleted; files of another model or format version, and anything else, are left
 * alone, and so are symlinks, FIFOs and anything else that is not a regular file (never opened:
 * a link would lead out of the folder, a FIFO would block the server).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelIdentity } from '../../model/fingerprint.js';
import { notRegular, openRegular, readRegular, writeAll, writeFileAtomic } from '../../safe-file.js';
import { BODY_OFFSET, HEADER_BYTES, KvcError, decodeFile, decodeHeader, decodeToolMap, encodeFile, encodeHeader, type KvcHeader, type SaveReason } from '../../kvc/format.js';

export interface DiskCacheOptions {
  dir: string;
  budgetBytes: number;
  /** the loaded model: its fingerprint goes into every file and must match to load one */
  model: ModelIdentity;
  log?: (msg: string) => void;
}

export interface CacheEntry {
  file: string;
  header: KvcHeader;
  text: string;
  /** the tool-call ids of the file's tool map (read with the header: findTools reads only files that hold a wanted id) */
  toolIds: Set<string>;
}

/**
 * Bytes of rendered text a file may hold per token it claims (a token's text is a few bytes; the
 * longest in the vocabulary far below this), plus a margin: the index holds every file's text, so
 * a crafted file claiming a 400 MB text must not get that into memory.
 */
const TEXT_BYTES_PER_TOKEN = 256;
/** Largest tool map indexed (a file claiming more is indexed without its tool ids). */
const MAX_TOOL_MAP_BYTES = 16 << 20;

export class DiskCache {
  /** entries() results by file, valid while the file's inode, size and mtime are unchanged */
  private index = new Map<string, { ino: number; size: number; mtimeMs: number; entry: CacheEntry }>();
  /** files already skipped, by the stat they had then (logged once; looked at again when they change) */
  private skipped = new Map<string, string>();

  constructor(readonly o: DiskCacheOptions) {
    fs.mkdirSync(o.dir, { recursive: true });
    // leftovers of a crash during a save are never valid files
    for (const f of fs.readdirSync(o.dir)) {
      if (!f.endsWith('.tmp')) continue;
      try {
        if (!fs.lstatSync(path.join(o.dir, f)).isDirectory()) fs.rmSync(path.join(o.dir, f), { force: true });
      } catch (e) {
        this.log(`cannot remove the leftover ${f}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
    }
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
      fingerprint: this.o.model.fingerprint,
      header: { quantBits: this.o.model.expertBits, reason: o.reason, flags: 0, tokens: o.tokens, hits: 0, ctx: o.ctx, created: now, lastUsed: now, payloadBytes: o.payload.byteLength },
      text: o.text, payload: o.payload, tools: o.tools ?? new Map(),
    });
    writeFileAtomic(file, bytes);
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
        const st = fs.lstatSync(file);
        if (this.skipped.get(file) === statKey(st)) continue;
        const odd = notRegular(st);
        if (odd) throw new KvcError(`${odd}: not opened`, 'foreign');
        // a file with holes (mostly unallocated) was not written by a save, which writes every byte
        if (st.size > 1 << 20 && st.blocks * 512 < st.size / 2) throw new KvcError(`sparse (${st.size} bytes, ${st.blocks * 512} allocated): not a file this server wrote`, 'foreign');
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
        this.reject(file, e as Error);
      }
    }
    for (const f of this.index.keys()) if (!seen.has(f)) this.index.delete(f);
    return out;
  }

  private readEntry(file: string): CacheEntry {
    const fd = openRegular(file);
    try {
      const size = fs.fstatSync(fd).size;
      const hb = Buffer.alloc(Math.min(size, BODY_OFFSET + 4));
      fs.readSync(fd, hb, 0, hb.length, 0);
      const header = decodeHeader(hb.subarray(0, HEADER_BYTES), size);
      if (hb.length < BODY_OFFSET + 4) throw new KvcError('truncated before the text length');
      this.checkModel(hb.subarray(HEADER_BYTES, BODY_OFFSET));
      const tlen = hb.readUInt32LE(BODY_OFFSET);
      if (BODY_OFFSET + 4 + tlen + header.payloadBytes > size) throw new KvcError('truncated: text and payload run past the end of the file');
      if (header.tokens > header.ctx || tlen > header.tokens * TEXT_BYTES_PER_TOKEN + 4096) throw new KvcError(`a ${tlen}-byte text for ${header.tokens} tokens of a ${header.ctx}-token context: not a file this server wrote`);
      const tb = Buffer.alloc(tlen);
      fs.readSync(fd, tb, 0, tlen, BODY_OFFSET + 4);
      return { file, header, text: tb.toString('utf8'), toolIds: readToolIds(fd, header, BODY_OFFSET + 4 + tlen + header.payloadBytes, size) };
    } finally {
      fs.closeSync(fd);
    }
  }

  private checkModel(fp: Buffer): void {
    if (!fp.equals(this.o.model.fingerprint)) {
      throw new KvcError(`written by another model (fingerprint ${fp.toString('hex', 0, 6)}…, this model's is ${this.o.model.fingerprint.toString('hex', 0, 6)}…)`, 'foreign');
    }
  }

  /**
   * Takes a file out of consideration with its reason logged. Corrupt files with our magic are
   * deleted (nothing can use them); valid files of another model or version are left in place.
   */
  private reject(file: string, e: Error): void {
    this.index.delete(file);
    const corrupt = !(e instanceof KvcError) || e.kind === 'corrupt';
    let ours = false;
    try { const b = Buffer.alloc(3); const fd = openRegular(file); fs.readSync(fd, b, 0, 3, 0); fs.closeSync(fd); ours = b.toString('latin1') === 'KVC'; } catch { /* unreadable, or not a regular file */ }
    const del = corrupt && ours;
    let gone = false;
    if (del) {
      try { fs.rmSync(file, { force: true }); gone = true; } catch { /* a read-only folder: the file stays, skipped */ }
    }
    this.log(`skipping ${path.basename(file)}: ${e.message}${gone ? ' (deleted: corrupt cache file)' : del ? ' (corrupt, and it cannot be deleted here)' : ''}`);
    if (gone) return;
    try { this.skipped.set(file, statKey(fs.lstatSync(file))); } catch { /* gone */ }
  }

  /** A file whose payload this session cannot take (e.g. other KV types): skipped with the reason, kept on disk. */
  skip(file: string, why: string): void {
    this.reject(file, new KvcError(why, 'foreign'));
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
      const f = decodeFile(readRegular(file));
      this.checkModel(f.fingerprint);
      f.header.hits++;
      f.header.lastUsed = Math.floor(Date.now() / 1000);
      // rewrite the counters only (the CRC leaves them out: see checksum()); a file we may read but
      // not write (a read-only folder or file) is still a valid file to load: its counters stay
      try {
        const fd = openRegular(file, true);
        const h = encodeHeader(f.header);
        try { writeAll(fd, h.subarray(8, 20), 8); writeAll(fd, h.subarray(24, 40), 24); } finally { fs.closeSync(fd); }
      } catch (e) {
        this.log(`${path.basename(file)}: hit counters not updated (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      }
      return f;
    } catch (e) {
      this.reject(file, e as Error);
      return undefined;
    }
  }

  /**
   * Tool-id → sampled text entries found across all files (exact replay after a restart). Only
   * files whose indexed tool ids hold a wanted one are read (and checked whole): an unknown id
   * costs no file reads.
   */
  findTools(ids: string[]): Map<string, string> {
    const want = new Set(ids);
    const out = new Map<string, string>();
    if (!want.size) return out;
    for (const e of this.entries()) {
      if (!(e.header.flags & 1) || ![...want].some((id) => e.toolIds.has(id))) continue;
      try {
        const f = decodeFile(readRegular(e.file));
        for (const [id, block] of f.tools) if (want.has(id)) out.set(id, block);
      } catch (err) {
        this.reject(e.file, err as Error);
      }
    }
    return out;
  }

  /** Deletes least-recently-used files until the directory fits the budget (never `keep`). */
  enforceBudget(keep?: string): void {
    const files = this.entries().map((e) => ({ ...e, size: fs.lstatSync(e.file).size })).sort((a, b) => a.header.lastUsed - b.header.lastUsed || a.header.created - b.header.created);
    let total = files.reduce((s, f) => s + f.size, 0);
    for (const f of files) {
      if (total <= this.o.budgetBytes) break;
      if (f.file === keep) continue;
      try {
        fs.rmSync(f.file, { force: true });
      } catch (e) {
        this.log(`cannot evict ${path.basename(f.file)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        continue;
      }
      total -= f.size;
      this.log(`evicted ${path.basename(f.file)} (least recently used)`);
    }
  }
}

/** The ids of a file's tool map (KTM section from `at` to the file's end), bounded; empty when it is absent, too large or malformed (the whole file is checked when one is used). */
function readToolIds(fd: number, header: KvcHeader, at: number, size: number): Set<string> {
  const ids = new Set<string>();
  const n = size - at;
  if (!(header.flags & 1) || n < 8 || n > MAX_TOOL_MAP_BYTES) return ids;
  const b = Buffer.alloc(n);
  fs.readSync(fd, b, 0, n, at);
  try { return new Set(decodeToolMap(b, 0).tools.keys()); } catch { return ids; }
}

function statKey(st: fs.Stats): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
}
