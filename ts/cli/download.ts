/**
 * `q36 download q2-imatrix | q2-q4-imatrix | mtp`: fetches the published QuarkStar GGUFs into
 * gguf/, resuming a partial file with an HTTP Range request, verifying the final size against
 * the server's, with a progress line. The base URL can point at a mirror (--base-url / Q36_HF_BASE).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { CliError } from './load-tokenizer.js';

export const HF_BASE = 'https://huggingface.co/Ninnix96/Qwen3.6-35B-A3B-gguf/resolve/main';

export const MODELS: Record<string, string> = {
  'q2-imatrix': 'Qwen3.6-35B-A3B-AntirezExperts-IQ2XXS-gateup-Q2K-down-Q8rest.gguf',
  'q2-q4-imatrix': 'Qwen3.6-35B-A3B-Layers34-39Q4KExperts-OtherExpertLayersIQ2XXSGateUp-Q2KDown-Q8Rest-imatrix.gguf',
  mtp: 'Qwen3.6-35B-A3B-MTP.gguf',
};

interface Response { status: number; headers: http.IncomingHttpHeaders; body: http.IncomingMessage }

function get(url: string, headers: Record<string, string>, redirects = 5): Promise<Response> {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http;
    const req = mod.get(url, { headers: { 'user-agent': 'quarkstar-q36', ...headers } }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location && redirects > 0) {
        res.resume();
        get(new URL(res.headers.location, url).toString(), headers, redirects - 1).then(resolve, reject);
        return;
      }
      resolve({ status, headers: res.headers, body: res });
    });
    req.on('error', reject);
  });
}

export interface DownloadOptions {
  which: string;
  dir: string;
  baseUrl?: string;
  progress?: (done: number, total: number) => void;
}

/** Downloads (or resumes) one model; returns the final path. */
export async function download(o: DownloadOptions): Promise<string> {
  const name = MODELS[o.which];
  if (!name) throw new CliError(`download: unknown model "${o.which}" (one of ${Object.keys(MODELS).join(', ')})`);
  const url = `${(o.baseUrl ?? process.env.Q36_HF_BASE ?? HF_BASE).replace(/\/$/, '')}/${encodeURIComponent(name)}`;
  fs.mkdirSync(o.dir, { recursive: true });
  const final = path.join(o.dir, name), part = `${final}.part`;
  const have = fs.existsSync(part) ? fs.statSync(part).size : 0;
  let res: Response;
  try {
    res = await get(url, have > 0 ? { range: `bytes=${have}-` } : {});
  } catch (e) {
    throw new CliError(`download: cannot reach ${url}: ${(e as Error).message}`);
  }
  let total: number, start: number;
  if (res.status === 206) {
    const m = /bytes (\d+)-\d+\/(\d+)/.exec(String(res.headers['content-range'] ?? ''));
    if (!m || Number(m[1]) !== have) { res.body.resume(); throw new CliError(`download: server answered a resume with an unexpected Content-Range "${res.headers['content-range']}"`); }
    total = Number(m[2]);
    start = have;
  } else if (res.status === 200) {
    total = Number(res.headers['content-length'] ?? NaN);
    start = 0; // no range support: start over
  } else if (res.status === 416 && have > 0) {
    res.body.resume();
    fs.renameSync(part, final); // already complete
    return final;
  } else {
    res.body.resume();
    throw new CliError(`download: ${url} answered HTTP ${res.status}`);
  }
  const out = fs.createWriteStream(part, { flags: start > 0 ? 'a' : 'w' });
  let done = start;
  await new Promise<void>((resolve, reject) => {
    res.body.on('data', (chunk: Buffer) => { done += chunk.length; o.progress?.(done, total); });
    res.body.on('error', reject);
    res.body.on('aborted', () => reject(new CliError(`download: connection dropped at ${done} bytes; run the same command again to resume`)));
    out.on('error', reject);
    out.on('finish', () => resolve());
    res.body.pipe(out);
  });
  const size = fs.statSync(part).size;
  if (Number.isFinite(total) && size !== total) throw new CliError(`download: got ${size} of ${total} bytes; run the same command again to resume`);
  fs.renameSync(part, final);
  return final;
}
