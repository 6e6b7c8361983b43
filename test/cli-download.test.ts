import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { download, keepsAuth, MODELS } from '../ts/cli/download.js';
import { tmpDir } from './helpers.js';
import { createHash } from 'node:crypto';

const ROOT = path.resolve(__dirname, '..');
const BODY = Buffer.alloc(3 * 1024 * 1024 + 123);
for (let i = 0; i < BODY.length; i++) BODY[i] = (i * 2654435761) >>> 24;

let server: http.Server;
let base = '';
let dropAfter = 0; // the next full response is cut after this many bytes (simulated network failure)
const requests: string[] = [];
let body = BODY; // the remote file's current version
let etag = '"v1"';
let linkedSha: string | undefined; // an X-Linked-Etag on a redirect hop, as Hugging Face sends
const auth: (string | undefined)[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests.push(`${req.url} ${req.headers.range ?? ''}`);
    auth.push(req.headers.authorization);
    if (req.url!.startsWith('/repo/')) {
      // the repository's resolve URL redirects to the storage host (another host: 'localhost')
      res.writeHead(302, { location: `http://localhost:${(server.address() as { port: number }).port}/cdn/${req.url!.split('/').pop()}`, ...(linkedSha ? { 'x-linked-etag': `"${linkedSha}"`, 'x-linked-size': String(body.length) } : {}) });
      res.end();
      return;
    }
    const name = decodeURIComponent(req.url!.split('/').pop()!);
    if (name !== MODELS['q2-imatrix']) { res.writeHead(404); res.end(); return; }
    // If-Range: the range only while the validator still matches, else the whole (new) file
    let m = /bytes=(\d+)-/.exec(req.headers.range ?? '');
    if (m && req.headers['if-range'] !== undefined && req.headers['if-range'] !== etag) m = null;
    const start = m ? Number(m[1]) : 0;
    if (start >= body.length) { res.writeHead(416); res.end(); return; }
    const part = body.subarray(start);
    res.writeHead(m ? 206 : 200, { etag, 'content-length': part.length, ...(m ? { 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` } : {}) });
    if (dropAfter > 0) {
      const cut = dropAfter;
      dropAfter = 0;
      res.write(part.subarray(0, cut), () => res.destroy());
      return;
    }
    res.end(part);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}/repo/resolve/main`;
});
afterAll(() => server.close());

describe('q36 download', () => {
  it('resumes an interrupted transfer with an HTTP Range request and verifies the size', async () => {
    const dir = tmpDir();
    dropAfter = 1024 * 1024;
    await expect(download({ which: 'q2-imatrix', dir, baseUrl: base })).rejects.toThrow(/run the same command again to resume/);
    const part = path.join(dir, `${MODELS['q2-imatrix']}.part`);
    expect(fs.statSync(part).size).toBeGreaterThan(0);
    expect(fs.statSync(part).size).toBeLessThan(BODY.length);
    const have = fs.statSync(part).size;
    // the failed attempt settled with its partial file closed: nothing appends to it afterwards
    await new Promise((r) => setTimeout(r, 200));
    expect(fs.statSync(part).size).toBe(have);
    const file = await download({ which: 'q2-imatrix', dir, baseUrl: base });
    expect(requests[requests.length - 1]).toContain(`bytes=${have}-`);
    expect(fs.readFileSync(file).equals(BODY)).toBe(true);
    expect(fs.existsSync(part)).toBe(false);
  });

  it('a remote file changed between attempts is downloaded whole again (If-Range), never spliced', async () => {
    const dir = tmpDir();
    dropAfter = 1024 * 1024;
    await expect(download({ which: 'q2-imatrix', dir, baseUrl: base })).rejects.toThrow(/resume/);
    const v2 = Buffer.from(BODY).reverse();
    body = v2; etag = '"v2"';
    try {
      const file = await download({ which: 'q2-imatrix', dir, baseUrl: base });
      expect(requests[requests.length - 1]).toMatch(/bytes=\d+-/); // it asked to resume...
      expect(fs.readFileSync(file).equals(v2)).toBe(true); // ...and got, and kept, only the new version
    } finally {
      body = BODY; etag = '"v1"';
    }
  });

  it('a partial file without a recorded validator is not resumed (its version is unknown)', async () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, `${MODELS['q2-imatrix']}.part`), Buffer.alloc(1000, 7));
    const file = await download({ which: 'q2-imatrix', dir, baseUrl: base });
    expect(requests[requests.length - 1].trim().endsWith(MODELS['q2-imatrix'])).toBe(true); // no Range header
    expect(fs.readFileSync(file).equals(BODY)).toBe(true);
  });

  it('checks the SHA-256 the repository publishes; sends the token to the repository host only', async () => {
    const dir = tmpDir();
    linkedSha = createHash('sha256').update(BODY).digest('hex');
    try {
      auth.length = 0;
      const file = await download({ which: 'q2-imatrix', dir, baseUrl: base.replace('127.0.0.1', '127.0.0.1').replace('/resolve/main', '/resolve/main'), token: 'hf_secret' });
      expect(fs.readFileSync(file).equals(BODY)).toBe(true);
      expect(auth).toEqual(['Bearer hf_secret', undefined]); // repository hop, then the storage host
      fs.rmSync(file);
      linkedSha = 'ab'.repeat(32);
      await expect(download({ which: 'q2-imatrix', dir, baseUrl: base })).rejects.toThrow(/SHA-256 mismatch.*removed/);
      expect(fs.existsSync(file) || fs.existsSync(`${file}.part`)).toBe(false);
    } finally {
      linkedSha = undefined;
    }
  });

  it('the token never follows a redirect to another origin: another host, another port, or https -> http on the same host (#45 item 8)', () => {
    expect(keepsAuth('https://hf.example/a', 'https://hf.example/b')).toBe(true);
    expect(keepsAuth('https://hf.example/a', 'http://hf.example/b')).toBe(false);
    expect(keepsAuth('https://hf.example/a', 'https://cdn.example/b')).toBe(false);
    expect(keepsAuth('http://hf.example:8000/a', 'http://hf.example:8001/b')).toBe(false);
  });

  it('a stalled server fails the download after the idle timeout; a body with neither length nor hash is refused (#45 item 8)', async () => {
    const name = MODELS['q2-imatrix'];
    const odd = http.createServer((req, res) => {
      if (req.url!.startsWith('/stall/')) { res.writeHead(200, { 'content-length': 1000 }); res.write(Buffer.alloc(10)); return; }
      // chunked, no length, no hash, ending cleanly after a short body
      res.writeHead(200, { etag: '"x"' });
      res.end(Buffer.alloc(100));
    });
    await new Promise<void>((r) => odd.listen(0, '127.0.0.1', () => r()));
    const b = `http://127.0.0.1:${(odd.address() as { port: number }).port}`;
    try {
      const dir = tmpDir();
      const t0 = Date.now();
      await expect(download({ which: 'q2-imatrix', dir, baseUrl: `${b}/stall`, idleTimeoutMs: 300 })).rejects.toThrow(/connection (failed|dropped) at 10 bytes/);
      expect(Date.now() - t0).toBeLessThan(5000);
      const dir2 = tmpDir();
      await expect(download({ which: 'q2-imatrix', dir: dir2, baseUrl: `${b}/chunked` })).rejects.toThrow(/neither a Content-Length nor a SHA-256/);
      expect(fs.existsSync(path.join(dir2, name))).toBe(false);
    } finally {
      odd.closeAllConnections();
      odd.close();
    }
  });

  it('the CLI downloads into the model store (HOME/.q36/models, Q36_MODELS, --dir), and names a clear error for unknown models or HTTP errors', async () => {
    const cwd = tmpDir(), home = tmpDir();
    const run = (args: string[], extra: Record<string, string> = {}) => new Promise<{ code: number; out: string; err: string }>((resolve) => {
      const env: NodeJS.ProcessEnv = { ...process.env, HF_TOKEN: 'hf_from_env', HOME: home, ...extra };
      delete env.Q36_MODELS; delete env.Q36_MODEL;
      Object.assign(env, extra);
      const p = spawn(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36.js'), 'download', ...args], { cwd, env });
      let out = '', err = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (err += d));
      p.on('close', (code) => resolve({ code: code ?? -1, out, err }));
    });
    auth.length = 0;
    const ok = await run(['q2-imatrix', '--base-url', base]);
    expect(ok.code, ok.err).toBe(0);
    expect(auth[0]).toBe('Bearer hf_from_env');
    const flagged = await run(['q2-imatrix', '--base-url', base, '--tokn', 'x']);
    expect(flagged.code).toBe(2);
    expect(flagged.err).toMatch(/unknown flag --tokn/);
    expect(fs.readFileSync(path.join(home, '.q36', 'models', MODELS['q2-imatrix'])).equals(BODY)).toBe(true);
    expect(ok.out).toContain(`downloaded ${path.join(home, '.q36', 'models', MODELS['q2-imatrix'])}`);
    expect(fs.existsSync(path.join(cwd, 'gguf'))).toBe(false);
    expect((await run(['q2-imatrix', '--base-url', base], { Q36_MODELS: path.join(cwd, 'store') })).code).toBe(0);
    expect(fs.readFileSync(path.join(cwd, 'store', MODELS['q2-imatrix'])).equals(BODY)).toBe(true);
    expect((await run(['q2-imatrix', '--base-url', base, '--dir', 'here'])).code).toBe(0);
    expect(fs.readFileSync(path.join(cwd, 'here', MODELS['q2-imatrix'])).equals(BODY)).toBe(true);
    const bad = await run(['q9']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/unknown model "q9"/);
    const missing = await run(['mtp', '--base-url', base]);
    expect(missing.code).toBe(2);
    // (the head drafts on both backends: no note that it does not)
    expect(missing.err).not.toMatch(/note:/);
    expect(missing.err).toMatch(/answered HTTP 404/);
  });
});

describe('the download progress line (#48 item 1)', () => {
  it('size, share, speed of this run and time left', async () => {
    const { progressLine } = await import('../ts/cli/download.js');
    const G = 2 ** 30;
    expect(progressLine(1.2 * G, 10.93 * G, 1e9, 10_000)).toBe('1.20 / 10.93 GiB 11.0%, 100.0 MB/s, 1 min 44 s left');
    expect(progressLine(5 * G, 10 * G, 5e6, 1000)).toBe('5.00 / 10.00 GiB 50.0%, 5.0 MB/s, 17 min 54 s left');
    expect(progressLine(1 * G, 1.5 * G, 1e8, 1000)).toBe('1.00 / 1.50 GiB 66.7%, 100.0 MB/s, 5 s left');
    expect(progressLine(3 * G, Infinity, 0, 0)).toBe('3.00 / ? GiB');
    expect(progressLine(1 * G, 200 * G, 1e6, 1000)).toMatch(/, 1\.0 MB\/s, 59 h 21 min left$/);
  });
});
