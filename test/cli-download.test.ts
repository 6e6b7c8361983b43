import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { download, MODELS } from '../ts/cli/download.js';
import { tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const BODY = Buffer.alloc(3 * 1024 * 1024 + 123);
for (let i = 0; i < BODY.length; i++) BODY[i] = (i * 2654435761) >>> 24;

let server: http.Server;
let base = '';
let dropAfter = 0; // the next full response is cut after this many bytes (simulated network failure)
const requests: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests.push(`${req.url} ${req.headers.range ?? ''}`);
    const name = decodeURIComponent(req.url!.split('/').pop()!);
    if (name !== MODELS['q2-imatrix']) { res.writeHead(404); res.end(); return; }
    const m = /bytes=(\d+)-/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    if (start >= BODY.length) { res.writeHead(416); res.end(); return; }
    const body = BODY.subarray(start);
    res.writeHead(m ? 206 : 200, { 'content-length': body.length, ...(m ? { 'content-range': `bytes ${start}-${BODY.length - 1}/${BODY.length}` } : {}) });
    if (dropAfter > 0) {
      const cut = dropAfter;
      dropAfter = 0;
      res.write(body.subarray(0, cut), () => res.destroy());
      return;
    }
    res.end(body);
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
    const file = await download({ which: 'q2-imatrix', dir, baseUrl: base });
    expect(requests[requests.length - 1]).toContain(`bytes=${have}-`);
    expect(fs.readFileSync(file).equals(BODY)).toBe(true);
    expect(fs.existsSync(part)).toBe(false);
  });

  it('the CLI downloads into gguf/, and names a clear error for unknown models or HTTP errors', async () => {
    const cwd = tmpDir();
    const run = (args: string[]) => new Promise<{ code: number; out: string; err: string }>((resolve) => {
      const p = spawn(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36.js'), 'download', ...args], { cwd });
      let out = '', err = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (err += d));
      p.on('close', (code) => resolve({ code: code ?? -1, out, err }));
    });
    const ok = await run(['q2-imatrix', '--base-url', base]);
    expect(ok.code, ok.err).toBe(0);
    expect(fs.readFileSync(path.join(cwd, 'gguf', MODELS['q2-imatrix'])).equals(BODY)).toBe(true);
    const bad = await run(['q9']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/unknown model "q9"/);
    const missing = await run(['mtp', '--base-url', base]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/answered HTTP 404/);
  });
});
