/**
 * `q36 download q2-imatrix | q2-q4-imatrix | mtp`: fetches the published QuarkStar GGUFs into
 * gguf/, with a progress line. The base URL can point at a mirror (--base-url / Q36_HF_BASE);
 * a Hugging Face token (--token / HF_TOKEN) is sent for gated or rate-limited repositories.
 *
 * A partial file is resumed only when it provably holds the same version of the remote file:
 * its validator (ETag, else Last-Modified) is kept beside it (NAME.part.json) and the resume is
 * an If-Range request, so a file changed upstream comes back whole (200) and the download starts
 * over instead of splicing two versions. The finished file is checked against the size and, when
 * the repository publishes one (Hugging Face's X-Linked-Etag for LFS files), the SHA-256.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { CliError } from './load-tokenizer.js';
import { MODELS } from './model-store.js';

export const HF_BASE = 'https://huggingface.co/Ninnix96/Qwen3.6-35B-A3B-gguf/resolve/main';

/** The files `q36 download NAME` fetches (model-store.ts names them for `q36 models` too). */
export { MODELS };

/** "1.20 / 10.93 GiB 11.0%, 85.3 MB/s, 1 min 54 s left": `got` bytes of this run in `ms` (a resumed part not counted in the speed). */
export function progressLine(done: number, total: number, got: number, ms: number): string {
  const known = Number.isFinite(total) && total > 0;
  const rate = ms > 0 ? got / (ms / 1000) : 0;
  const left = known && rate > 0 ? (total - done) / rate : undefined;
  const eta = left === undefined ? '' : left >= 3600 ? `, ${Math.floor(left / 3600)} h ${Math.round((left % 3600) / 60)} min left` : left >= 60 ? `, ${Math.floor(left / 60)} min ${Math.round(left % 60)} s left` : `, ${Math.round(left)} s left`;
  return `${(done / 2 ** 30).toFixed(2)} / ${known ? (total / 2 ** 30).toFixed(2) : '?'} GiB${known ? ` ${(100 * done / total).toFixed(1)}%` : ''}${rate > 0 ? `, ${(rate / 1e6).toFixed(1)} MB/s` : ''}${eta}`;
}

interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: http.IncomingMessage;
  /** headers of the redirects on the way (Hugging Face puts the LFS hash and size there) */
  hops: http.IncomingHttpHeaders[];
}

/** Whether a redirect from `from` to `to` may carry the token: the same origin (scheme, host and port) only. */
export function keepsAuth(from: string, to: string): boolean {
  return new URL(from).origin === new URL(to).origin;
}

/** Seconds a connection may stay silent (no answer, no body bytes) before the download gives up. */
export const IDLE_TIMEOUT_S = 60;

function get(url: string, headers: Record<string, string>, idleMs: number, redirects = 5, hops: http.IncomingHttpHeaders[] = []): Promise<Response> {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http;
    const req = mod.get(url, { headers: { 'user-agent': 'quarkstar-q36', ...headers } }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location && redirects > 0) {
        res.resume();
        const next = new URL(res.headers.location, url);
        // the token is for the repository's origin only: not for the storage host it redirects
        // to, and not over plain http (an https -> http redirect on the same host would send it in clear)
        const h = { ...headers };
        if (!keepsAuth(url, next.toString())) delete h.authorization;
        get(next.toString(), h, idleMs, redirects - 1, [...hops, res.headers]).then(resolve, reject);
        return;
      }
      resolve({ status, headers: res.headers, body: res, hops });
    });
    // a stalled server (no answer, or a body that stops) ends the download instead of hanging it
    req.setTimeout(idleMs, () => req.destroy(new Error(`no data for ${idleMs / 1000} s`)));
    req.on('error', reject);
  });
}

export interface DownloadOptions {
  which: string;
  dir: string;
  baseUrl?: string;
  /** Hugging Face access token */
  token?: string;
  /** ms a connection may stay silent before the download fails (default IDLE_TIMEOUT_S) */
  idleTimeoutMs?: number;
  progress?: (done: number, total: number) => void;
  /** called before the SHA-256 check of the finished file (it reads the whole file) */
  verifying?: () => void;
}

/** What a partial file was downloaded from (NAME.part.json). */
interface PartMeta { url: string; validator: string; total: number }

const header = (h: http.IncomingHttpHeaders, k: string) => { const v = h[k]; return Array.isArray(v) ? v[0] : v; };

/** The SHA-256 a Hugging Face LFS file advertises, if any (X-Linked-Etag on the resolve hop, else a hash-shaped ETag). */
export function advertisedSha256(r: Pick<Response, 'headers' | 'hops'>): string | undefined {
  for (const h of [...r.hops, r.headers]) {
    for (const k of ['x-linked-etag', 'etag']) {
      const v = header(h, k)?.replace(/^W\//, '').replace(/"/g, '').toLowerCase();
      if (v && /^[0-9a-f]{64}$/.test(v)) return v;
    }
  }
  return undefined;
}

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 8 << 20 })) h.update(chunk as Buffer);
  return h.digest('hex');
}

function readMeta(file: string): PartMeta | undefined {
  try {
    const m = JSON.parse(fs.readFileSync(file, 'utf8')) as PartMeta;
    return typeof m.validator === 'string' && m.validator && typeof m.url === 'string' ? m : undefined;
  } catch {
    return undefined;
  }
}

/** Downloads (or resumes) one model; returns the final path. */
export async function download(o: DownloadOptions): Promise<string> {
  const name = MODELS[o.which];
  if (!name) throw new CliError(`download: unknown model "${o.which}" (one of ${Object.keys(MODELS).join(', ')})`);
  const url = `${(o.baseUrl ?? HF_BASE).replace(/\/$/, '')}/${encodeURIComponent(name)}`;
  fs.mkdirSync(o.dir, { recursive: true });
  const final = path.join(o.dir, name), part = `${final}.part`, metaFile = `${part}.json`;
  const auth: Record<string, string> = o.token ? { authorization: `Bearer ${o.token}` } : {};
  const meta = fs.existsSync(part) ? readMeta(metaFile) : undefined;
  // a partial file of unknown origin cannot be proven to match: start over
  const have = meta && meta.url === url && fs.existsSync(part) ? fs.statSync(part).size : 0;
  let res: Response;
  try {
    res = await get(url, have > 0 ? { ...auth, range: `bytes=${have}-`, 'if-range': meta!.validator } : auth, o.idleTimeoutMs ?? IDLE_TIMEOUT_S * 1000);
  } catch (e) {
    throw new CliError(`download: cannot reach ${url}: ${(e as Error).message}`);
  }
  let total: number, start: number;
  if (res.status === 206 && have > 0) {
    const m = /bytes (\d+)-\d+\/(\d+)/.exec(String(res.headers['content-range'] ?? ''));
    if (!m || Number(m[1]) !== have || Number(m[2]) !== meta!.total) { res.body.resume(); throw new CliError(`download: server answered a resume with an unexpected Content-Range "${res.headers['content-range']}"; delete ${part} to start over`); }
    total = Number(m[2]);
    start = have;
  } else if (res.status === 200) {
    total = Number(res.headers['content-length'] ?? NaN);
    start = 0; // a fresh start: no partial file, no range support, or the remote file changed (If-Range)
  } else if (res.status === 416 && have > 0 && have === meta!.total) {
    res.body.resume();
    start = total = have; // already complete: verified below
  } else {
    res.body.resume();
    const why = res.status === 401 || res.status === 403 ? ' (gated or private: pass a Hugging Face token with --token or HF_TOKEN)' : res.status === 429 ? ' (rate-limited: retry later, or pass --token / HF_TOKEN)' : '';
    throw new CliError(`download: ${url} answered HTTP ${res.status}${why}`);
  }
  const linkedSize = Number(header(res.hops[0] ?? {}, 'x-linked-size') ?? NaN);
  if (Number.isFinite(linkedSize) && Number.isFinite(total) && linkedSize !== total) { res.body.resume(); throw new CliError(`download: the repository lists ${linkedSize} bytes but the server sends ${total}`); }
  const sha = advertisedSha256(res);
  // a body with neither a length nor a hash cannot be told from one cut short (a chunked body
  // that ends cleanly early): nothing could check it, so it is not taken as the model
  if (!Number.isFinite(total) && !sha) { res.body.resume(); throw new CliError(`download: ${url} sends neither a Content-Length nor a SHA-256, so the file could not be checked; use another --base-url`); }
  if (start < total || res.status === 200) {
    const validator = header(res.headers, 'etag') ?? header(res.headers, 'last-modified');
    if (validator) fs.writeFileSync(metaFile, JSON.stringify({ url, validator, total } satisfies PartMeta));
    else fs.rmSync(metaFile, { force: true }); // without a validator a later resume could mix versions
    const out = fs.createWriteStream(part, { flags: start > 0 ? 'a' : 'w' });
    let done = start;
    await new Promise<void>((resolve, reject) => {
      // a failed transfer settles only once the partial file is flushed and closed: settling
      // earlier let a resume read its size while the old stream still appended (bytes written
      // twice, a file larger than the model)
      let failed: Error | undefined;
      const fail = (e: Error) => {
        if (failed) return;
        failed = e;
        res.body.unpipe(out);
        out.end();
      };
      res.body.on('data', (chunk: Buffer) => { done += chunk.length; o.progress?.(done, total); });
      res.body.on('error', (e: Error) => fail(new CliError(`download: connection failed at ${done} bytes (${e.message}); run the same command again to resume`)));
      res.body.on('aborted', () => fail(new CliError(`download: connection dropped at ${done} bytes; run the same command again to resume`)));
      out.on('error', (e) => { failed ??= new CliError(`download: cannot write ${part}: ${e.message}`); });
      out.on('close', () => (failed ? reject(failed) : resolve()));
      res.body.pipe(out);
    });
  }
  const size = fs.statSync(part).size;
  if (Number.isFinite(total) && size !== total) throw new CliError(`download: got ${size} of ${total} bytes; run the same command again to resume`);
  if (sha) {
    o.verifying?.();
    const got = await sha256File(part);
    if (got !== sha) {
      fs.rmSync(part, { force: true });
      fs.rmSync(metaFile, { force: true });
      throw new CliError(`download: SHA-256 mismatch (expected ${sha}, got ${got}); the damaged file was removed, run the same command again`);
    }
  }
  fs.renameSync(part, final);
  fs.rmSync(metaFile, { force: true });
  return final;
}
