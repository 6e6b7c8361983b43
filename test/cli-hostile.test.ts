/**
 * The command-line edges (reliability issue): q36-server's start-up checks and order, its logs and
 * shutdown codes; q36's Ctrl+C handling in a prefill; model control bytes on a terminal.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { safeForTerminal } from '../ts/terminal.js';
import { driveQ36, fixture, tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const SERVER = path.join(ROOT, 'dist/ts/cli/q36-server.js');
const Q36 = path.join(ROOT, 'dist/ts/cli/q36.js');
const MODEL = fixture('tinyA/tinyA-q2.gguf');

function serverCmd(args: string[]) {
  return spawnSync(process.execPath, [SERVER, '-m', MODEL, '--cpu', ...args], { encoding: 'utf8', timeout: 60_000 });
}

/** Starts q36-server on a free port; resolves once it says it is serving. */
async function startServer(args: string[] = []): Promise<{ p: ChildProcess; base: string; err: () => string }> {
  const p = spawn(process.execPath, [SERVER, '-m', MODEL, '--cpu', '--port', '0', '--ctx', '2048', ...args]);
  let err = '';
  p.stderr!.on('data', (d) => (err += d));
  const base = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`q36-server did not start: ${err}`)), 60_000);
    p.stderr!.on('data', () => { const m = /serving on (http:\/\/[^ ]+)/.exec(err); if (m) { clearTimeout(t); resolve(m[1]); } });
    p.on('exit', () => reject(new Error(`q36-server exited: ${err}`)));
  });
  return { p, base, err: () => err };
}

describe('q36-server start-up', () => {
  it('refuses an empty --api-key, an unwritable --trace and a bad --log-level, --allow-origin or --cache-scope, naming each', () => {
    const key = serverCmd(['--api-key', '']);
    expect(key.status).toBe(2);
    expect(key.stderr).toMatch(/--api-key is empty/);
    const trace = serverCmd(['--trace', '/missing/dir/trace.jsonl']);
    expect(trace.status).toBe(2);
    expect(trace.stderr).toMatch(/cannot write --trace "\/missing\/dir\/trace.jsonl": ENOENT/);
    expect(serverCmd(['--log-level', 'loud']).stderr).toMatch(/--log-level must be one of error, warn, info, debug/);
    expect(serverCmd(['--cache-scope', 'user']).stderr).toMatch(/--cache-scope must be shared or key \(got "user"\)/);
    expect(serverCmd(['--allow-origin', 'example.com/x']).stderr).toMatch(/--allow-origin "example.com\/x" is not an origin/);
  });

  it('--ssd-streaming on the CPU: the same logits as resident experts (bit for bit) through a small cache, cold, warm, with full layers and with a damaged usage file; on Vulkan as well', () => {
    const q2q4 = fixture('tinyA/tinyA-q2q4.gguf'), dir = tmpDir(), home = tmpDir();
    // the expert-use counts go to $HOME/.q36/expert-usage/: a home of the test's own
    const run = (extra: string[], out: string) => spawnSync(process.execPath, [Q36, '-m', q2q4, '--cpu', ...extra, '--prompt-ids', '5,17,300,42,9,100,200,300', '-n', '6', '--temp', '0', '--dump-logits', path.join(dir, out)], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HOME: home } });
    const usage = path.join(home, '.q36', 'expert-usage', 'tinyA-q2q4.gguf.json');
    const res = run([], 'resident.f32');
    expect(res.status).toBe(0);
    expect(res.stderr).toMatch(/experts resident/);
    // 8 slots for 4 layers × 6 experts: the cache evicts
    for (const [cache, out, plan] of [['8', 'slots.f32', /experts streamed through 8 cache slots/], ['1MiB', 'size.f32', /experts streamed through \d+ cache slots/]] as [string, string, RegExp][]) {
      const r = run(['--ssd-streaming', '--ssd-streaming-cache-experts', cache], out);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toMatch(plan);
      expect(fs.readFileSync(path.join(dir, out)).equals(fs.readFileSync(path.join(dir, 'resident.f32')))).toBe(true);
    }
    // the streamed runs counted their routes; the next one preloads the most used (warm start),
    // --ssd-streaming-cold does not, a damaged file is ignored by name: the logits never change
    const counts = JSON.parse(fs.readFileSync(usage, 'utf8')) as { counts: number[] };
    expect(counts.counts.length).toBe(4 * 6);
    expect(counts.counts.reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
    for (const [extra, plan] of [
      [['--ssd-streaming-cache-experts', '8'], /8 experts preloaded from .*tinyA-q2q4\.gguf\.json/],
      [['--ssd-streaming-cache-experts', '8', '--ssd-streaming-preload-experts', '3'], /3 experts preloaded/],
      [['--ssd-streaming-cache-experts', '8', '--ssd-streaming-cold'], /cold start \(--ssd-streaming-cold\)/],
      [['--ssd-streaming-cache-experts', '6', '--ssd-streaming-full-layers', '2'], /experts of layers 0-1 resident, the rest streamed through 6 cache slots/],
    ] as [string[], RegExp][]) {
      const r = run(['--ssd-streaming', ...extra], 'warm.f32');
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toMatch(plan);
      expect(fs.readFileSync(path.join(dir, 'warm.f32')).equals(fs.readFileSync(path.join(dir, 'resident.f32')))).toBe(true);
    }
    fs.writeFileSync(usage, '{"format": "q36-expert-usage", "vers');
    const damaged = run(['--ssd-streaming', '--ssd-streaming-cache-experts', '8'], 'warm.f32');
    expect(damaged.status).toBe(0);
    expect(damaged.stderr).toMatch(/usage file ignored: .* is not JSON/);
    expect(fs.readFileSync(path.join(dir, 'warm.f32')).equals(fs.readFileSync(path.join(dir, 'resident.f32')))).toBe(true);
    const small = run(['--ssd-streaming', '--ssd-streaming-cache-experts', '3'], 'x.f32');
    expect(small.status).toBe(2);
    expect(small.stderr).toMatch(/an expert cache of 3 slots .* cannot hold one layer's experts: need 6 expert slots/);
    for (const [args, msg] of [
      [['--ssd-streaming-cache-experts', '8'], /needs --ssd-streaming/],
      [['--ssd-streaming', '--ssd-streaming-cache-experts', 'lots'], /--ssd-streaming-cache-experts expects a size/],
      [['--ssd-streaming-cold'], /--ssd-streaming-cold needs --ssd-streaming/],
      [['--ssd-streaming', '--ssd-streaming-cold', '--ssd-streaming-preload-experts', '10'], /not both/],
      [['--ssd-streaming', '--ssd-streaming-preload-experts', 'many'], /--ssd-streaming-preload-experts expects a number/],
      [['--ssd-streaming', '--ssd-streaming-full-layers', '-1'], /--ssd-streaming-full-layers must be ≥ 0/],
    ] as [string[], RegExp][]) {
      const r = run(args, 'x.f32');
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
    // the Vulkan engine streams too: F16 KV by default while streaming, so the resident run
    // names it; a cache below one layer's experts is refused the same way
    const vkRun = (extra: string[], out: string) => spawnSync(process.execPath, [Q36, '-m', q2q4, '--vulkan', ...extra, '--prompt-ids', '5,17,300,42,9,100,200,300', '-n', '6', '--temp', '0', '--dump-logits', path.join(dir, out)], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HOME: home } });
    const vkRes = vkRun(['-ctk', 'f16', '-ctv', 'f16'], 'vk-resident.f32');
    expect(vkRes.status, vkRes.stderr).toBe(0);
    const vk = vkRun(['--ssd-streaming', '--ssd-streaming-cache-experts', '8'], 'vk-streamed.f32');
    expect(vk.status, vk.stderr).toBe(0);
    expect(vk.stderr).toMatch(/routed experts streamed from the file through 8 device slots/);
    expect(vk.stderr).toMatch(/kv cache  f16\/f16/);
    expect(fs.readFileSync(path.join(dir, 'vk-streamed.f32')).equals(fs.readFileSync(path.join(dir, 'vk-resident.f32')))).toBe(true);
    const vkSmall = vkRun(['--ssd-streaming', '--ssd-streaming-cache-experts', '3'], 'x.f32');
    expect(vkSmall.status).toBe(2);
    expect(vkSmall.stderr).toMatch(/an expert cache of 3 slots .* cannot hold one layer's experts: need 6 expert slots/);
    const s = serverCmd(['--ssd-streaming-full-layers', '4']);
    expect(s.status).toBe(2);
    expect(s.stderr).toMatch(/--ssd-streaming-full-layers needs --ssd-streaming/);
  });

  it('--batched-session: a bad count is refused; N slots start with their memory printed and serve together', async () => {
    for (const bad of ['0', '2.5', 'many']) {
      const r = serverCmd(['--batched-session', bad]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/--batched-session/);
    }
    const env = spawnSync(process.execPath, [SERVER, '-m', MODEL, '--cpu', '--batched-session', '2'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, Q36_VK_SESSION_BATCH: 'yes' } });
    expect(env.status).not.toBe(0);
    expect(env.stderr).toMatch(/Q36_VK_SESSION_BATCH must be 0 \(ordered fallback\) or 1/);
    const s = await startServer(['--batched-session', '3']);
    try {
      expect(s.err()).toMatch(/sessions +3 slots × [\d.]+ MiB \(KV for ctx 2048 \+ DeltaNet state\) = [\d.]+ MiB/);
      expect(s.err()).toMatch(/serving on .*, 3 sessions\)/);
      const ask = (content: string) => fetch(`${s.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 3, temperature: 0 }) });
      const rs = await Promise.all(['one', 'two', 'three', 'four'].map(ask));
      expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      const props = await (await fetch(`${s.base}/props`)).json() as { batched_sessions: number };
      expect(props.batched_sessions).toBe(3);
    } finally {
      s.p.kill('SIGKILL');
    }
  });

  it('a port in use is reported before the model loads', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const r = serverCmd(['--port', String(port)]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`port ${port} on 127.0.0.1 is already in use`));
      expect(r.stderr).not.toMatch(/loading|kv cache|wasm heap/); // nothing of the model was loaded
    } finally {
      blocker.close();
    }
  });

  it('startup lines name the model, backend, ctx and memory; one line per request; shutdown closes sockets with 1001', async () => {
    const s = await startServer();
    try {
      expect(s.err()).toMatch(/bound http:\/\/127\.0\.0\.1:\d+; loading .*tinyA-q2\.gguf \(cpu, ctx 2048, KV f16\/f16\)/);
      expect(s.err()).toMatch(/kv cache +f16\/f16/);
      expect(s.err()).toMatch(/serving on .*\(model qwen3\.6-35b-a3b, cpu, ctx 2048, queue ≤ 64\)/);
      const r = await fetch(`${s.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }) });
      expect(r.status).toBe(200);
      await new Promise((res) => setTimeout(res, 100));
      expect(s.err()).toMatch(/POST \/v1\/chat\/completions 200 prompt=\d+ cached=0 generated=2 finish=length \d+ms/);
      const ws = new WebSocket(`${s.base.replace('http', 'ws')}/v1/chat/ws`);
      await new Promise((res) => ws.on('open', res));
      const closed = new Promise<number>((res) => ws.on('close', (code) => res(code)));
      s.p.kill('SIGTERM');
      expect(await closed).toBe(1001);
      await new Promise((res) => s.p.on('exit', res));
      expect(s.p.exitCode).toBe(0);
    } finally {
      s.p.kill('SIGKILL');
    }
  });
});

describe('q36 and Ctrl+C', () => {
  it('Ctrl+C during a one-shot prefill exits 130 with one line, no stack trace', async () => {
    const dir = tmpDir();
    const prompt = path.join(dir, 'long.txt');
    fs.writeFileSync(prompt, 'The lighthouse keeper climbed the stairs again. '.repeat(150));
    const p = spawn(process.execPath, [Q36, '--cpu', '-m', MODEL, '--ctx', '4096', '--prompt-file', prompt, '-n', '4']);
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    // the prefill reports progress once a second: interrupt once it has started
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no prefill progress: ${err}`)), 60_000);
      p.stderr.on('data', () => { if (/prefill \d+\/\d+ tokens/.test(err)) { clearTimeout(t); resolve(); } });
    });
    p.kill('SIGINT');
    const code = await new Promise<number | null>((r) => p.on('exit', (c) => r(c)));
    expect(code).toBe(130);
    expect(err).toMatch(/q36: interrupted/);
    expect(err).not.toMatch(/AbortError|at .*\.js:\d+/);
  });

  it('Ctrl+C during a chat prefill takes the message back out of the context', () => {
    const dir = tmpDir();
    const long = path.join(dir, 'long.txt');
    fs.writeFileSync(long, 'The lighthouse keeper climbed the stairs again. '.repeat(150));
    const out = driveQ36([
      { expect: 'q36> ', timeout: 60 },
      { send: 'Hi\r' },
      { expect: 'ctx (\\d+)/4096\\]', timeout: 60 },
      { expect: 'q36> ' },
      { send: `/read ${long}\r` },
      { expect: 'prefill \\[', timeout: 60 },
      { sigint: true },
      { expect: 'interrupted during prefill: the message was not kept; ctx (\\d+)/4096', timeout: 60 },
      { expect: 'q36> ' },
      { send: 'Again\r' },
      { expect: 'prefill \\d+ new tokens \\((\\d+) reused\\)', timeout: 60 },
      { expect: 'q36> ' },
      { send: '/quit\r' },
    ], ['--cpu', '-m', MODEL, '-n', '6', '--seed', '1', '--ctx', '4096'], 240_000);
    if (!out.ok) console.log(out.transcript.slice(-3000));
    expect(out.ok, `failed at step ${out.failed_step}`).toBe(true);
    const t = out.transcript;
    const afterFirst = Number(/ctx (\d+)\/4096\]/.exec(t)![1]);
    const afterInterrupt = Number(/not kept; ctx (\d+)\/4096/.exec(t)![1]);
    const reused = Number(/prefill \d+ new tokens \((\d+) reused\)[^\n]*\n(?![\s\S]*prefill \d+ new tokens)/.exec(t)![1]);
    expect(afterInterrupt).toBe(afterFirst); // the half-read file left no tokens behind
    expect(reused).toBe(afterFirst); // and the next message continues from the first answer
  });
});

describe('model text on a terminal', () => {
  it('control bytes are shown in caret notation; newlines, tabs and Unicode pass', () => {
    expect(safeForTerminal('a\x1b[2Jb\x07c\r\x7f\x9b')).toBe('a^[[2Jb^Gc^M^?<U+009B>');
    expect(safeForTerminal('line\n\ttab — ünïcödé 🙂')).toBe('line\n\ttab — ünïcödé 🙂');
  });
});
