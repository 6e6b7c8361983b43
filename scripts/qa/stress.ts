/**
 * The stress suite (`npm run test:stress`; `--quick` is the CI subset): hostile input against
 * every surface, counted. Loopback only, bounded in count and time, stops by itself.
 *
 *   gguf      truncation at every header offset and random byte flips in the header
 *   kvfile    cache-file truncation, flips, foreign-model and old-version files
 *   files     a hostile cache folder: links out of it, FIFOs, sparse files, read-only and random files
 *   http      field mutations of every endpoint's bodies, raw byte flips, nesting, sizes, UTF-8
 *   ws        frame fuzzing of /v1/chat/ws
 *   clients   32–64 concurrent mixed clients with random aborts; greedy answers checked
 *   kill9     kill -9 of a process saving cache files, then a restart
 *   download  q36 download against a hostile server: stalls (no answer, a body that stops),
 *             redirect loops and hops, bodies cut short, a wrong SHA-256, odd resumes, errors
 *   models    GET /v1/models polled throughout the HTTP phases
 *
 * Prints one line per phase and a total: cases tried, clean errors, crashes (must be 0), 5xx for
 * client input (0), foreign or damaged cache files loaded (0), wrong or mixed-up answers (0).
 * Exit status 1 when any of those is not 0.
 *
 * usage: node dist/scripts/qa/stress.js [--quick] [--seed N] [--model FILE]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { GgufError, readGguf } from '../../ts/gguf/index.js';
import { validateModel } from '../../ts/model/shape.js';
import { Tokenizer } from '../../ts/tokenizer/tokenizer.js';
import { Rng } from '../../ts/model/synth.js';
import { DiskCache } from '../../ts/server/kv-disk/disk-cache.js';
import { encodeFile } from '../../ts/kvc/format.js';
import { modelIdentity } from '../../ts/model/fingerprint.js';
import * as http from 'node:http';
import { createHash } from 'node:crypto';
import { download } from '../../ts/cli/download.js';
import { CliError } from '../../ts/cli/load-tokenizer.js';
import { MODELS } from '../../ts/cli/model-store.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const args = process.argv.slice(2);
const QUICK = args.includes('--quick');
const seedAt = args.indexOf('--seed');
const rng = new Rng(seedAt >= 0 ? Number(args[seedAt + 1]) : 1);
const modelAt = args.indexOf('--model');
const MODEL = modelAt >= 0 ? args[modelAt + 1] : path.join(ROOT, 'fixtures/tinyA/tinyA-q2.gguf');
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'q36-stress-'));

interface Count { tried: number; clean: number; crashes: number; fivexx: number; foreignLoaded: number; wrong: number; notes: string[] }
const newCount = (): Count => ({ tried: 0, clean: 0, crashes: 0, fivexx: 0, foreignLoaded: 0, wrong: 0, notes: [] });
const results: [string, Count][] = [];
const note = (c: Count, s: string) => { if (c.notes.length < 5) c.notes.push(s); };
const pick = <T>(a: readonly T[]): T => a[rng.int(0, a.length - 1)];

/** An error is clean when it is one of ours (a GGUF error or a validation message), not a JS fault. */
const cleanError = (e: unknown) => e instanceof GgufError || (e instanceof Error && e.constructor === Error && e.message.length > 0);

function ggufPhase(): Count {
  const c = newCount();
  const good = fs.readFileSync(MODEL);
  const head = readGguf(MODEL).dataStart;
  const f = path.join(TMP, 'mutant.gguf');
  const attempt = (bytes: Buffer, what: string) => {
    c.tried++;
    fs.writeFileSync(f, bytes);
    try {
      const g = readGguf(f);
      validateModel(g);
      new Tokenizer(g);
      c.clean++; // a mutation that leaves a valid file (e.g. a flipped byte inside a string) is fine
    } catch (e) {
      if (cleanError(e)) c.clean++;
      else { c.crashes++; note(c, `${what}: ${(e as Error).stack?.split('\n').slice(0, 2).join(' ')}`); }
    }
  };
  const stride = QUICK ? 97 : 1;
  for (let cut = 0; cut < head; cut += stride) attempt(good.subarray(0, cut), `truncated at ${cut}`);
  for (let i = 0; i < (QUICK ? 200 : 3000); i++) {
    const b = Buffer.from(good.subarray(0, Math.min(good.length, head + 4096)));
    const n = rng.int(1, 4);
    for (let k = 0; k < n; k++) b[rng.int(0, head - 1)] ^= 1 << rng.int(0, 7);
    attempt(b, `flip ${i}`);
  }
  return c;
}

function kvFilePhase(): Count {
  const c = newCount();
  const dir = path.join(TMP, 'kv');
  const model = modelIdentity(MODEL);
  const cache = new DiskCache({ dir, budgetBytes: 1 << 30, model });
  const payload = new Uint8Array(20000).map(() => rng.int(0, 255));
  const file = cache.save({ reason: 'cold', text: 'stress prefix', payload, tokens: 5, ctx: 64, tools: new Map([['call_1', '<tool_call>x</tool_call>']]) });
  const good = fs.readFileSync(file);
  const expectLoad = (bytes: Buffer, shouldLoad: boolean, what: string) => {
    c.tried++;
    fs.writeFileSync(file, bytes);
    try {
      const f = cache.load(file);
      if (f && !shouldLoad) { c.foreignLoaded++; note(c, `${what} loaded`); }
      else if (!f && shouldLoad) { c.wrong++; note(c, `${what}: a good file was refused`); }
      else c.clean++;
    } catch (e) {
      c.crashes++;
      note(c, `${what}: ${(e as Error).message}`);
    }
  };
  expectLoad(good, true, 'intact');
  for (let cut = 0; cut < good.length; cut += QUICK ? 257 : 1) expectLoad(good.subarray(0, cut), false, `truncated at ${cut}`);
  for (let i = 0; i < (QUICK ? 200 : 2000); i++) {
    const b = Buffer.from(good);
    // the hit counter and last-used time (bytes 12..15, 32..39) are rewritten on every load by design
    let at: number;
    do at = rng.int(0, b.length - 1); while ((at >= 12 && at < 16) || (at >= 32 && at < 40));
    b[at] ^= 1 << rng.int(0, 7);
    expectLoad(b, false, `flip at ${at}`);
  }
  // a valid file of another model (another fingerprint), and a version-1 file
  const foreign = encodeFile({ fingerprint: Buffer.alloc(32, 0x33), header: { quantBits: 2, reason: 'cold', flags: 0, tokens: 5, hits: 0, ctx: 64, created: 1, lastUsed: 1, payloadBytes: payload.length }, text: 'stress prefix', payload, tools: new Map() });
  expectLoad(foreign, false, 'another model');
  const v1 = Buffer.from(good); v1[3] = 1;
  expectLoad(v1, false, 'version 1');
  for (let i = 0; i < (QUICK ? 50 : 500); i++) expectLoad(Buffer.from(Array.from({ length: rng.int(0, 4000) }, () => rng.int(0, 255))), false, `random bytes ${i}`);
  expectLoad(good, true, 'intact again');
  return c;
}

/**
 * A cache folder holding what a hostile or broken one holds: symlinks to valid files outside it, a
 * FIFO, sparse files claiming huge texts, read-only files, random bytes; lookups, loads and tool
 * lookups must neither load nor rewrite anything outside, nor block, nor throw.
 */
function filesPhase(): Count {
  const c = newCount();
  const model = modelIdentity(MODEL);
  const outsideDir = path.join(TMP, 'outside'), dir = path.join(TMP, 'kv-hostile');
  fs.mkdirSync(outsideDir, { recursive: true });
  const outside = new DiskCache({ dir: outsideDir, budgetBytes: 1 << 30, model });
  const real = outside.save({ reason: 'cold', text: 'outside prefix', payload: new Uint8Array(4000), tokens: 5, ctx: 64, tools: new Map([['call_out', 'x']]) });
  const realBytes = fs.readFileSync(real);
  const cache = new DiskCache({ dir, budgetBytes: 1 << 30, model });
  const mine = cache.save({ reason: 'cold', text: 'inside prefix', payload: new Uint8Array(4000), tokens: 5, ctx: 64 });
  const name = (i: number) => path.join(dir, `${String(i).padStart(40, 'f')}.kv`);
  for (let i = 0; i < (QUICK ? 20 : 200); i++) {
    const f = name(i);
    const kind = rng.int(0, 4);
    try {
      if (kind === 0) fs.symlinkSync(real, f);
      else if (kind === 1) spawnSyncFifo(f);
      else if (kind === 2) { const b = Buffer.from(fs.readFileSync(mine).subarray(0, 84)); b.writeUInt32LE(rng.int(1 << 20, 1 << 30), 80); fs.writeFileSync(f, b); fs.truncateSync(f, (2 << 20) + rng.int(0, 1 << 20)); }
      else if (kind === 3) { fs.writeFileSync(f, fs.readFileSync(mine)); fs.chmodSync(f, 0o444); }
      else fs.writeFileSync(f, Buffer.from(Array.from({ length: rng.int(0, 3000) }, () => rng.int(0, 255))));
    } catch { continue; }
    c.tried++;
    const t0 = Date.now();
    try {
      const hit = cache.lookup('outside prefix and more');
      if (hit) { c.foreignLoaded++; note(c, `${path.basename(hit.file)} outside the folder was found`); }
      if (cache.findTools(['call_out', 'call_unknown']).size) { c.foreignLoaded++; note(c, 'a tool id outside the folder was found'); }
      const got = cache.load(f);
      if (got && got.text !== 'inside prefix') { c.foreignLoaded++; note(c, `kind ${kind} loaded`); }
      if (Date.now() - t0 > 5000) { c.wrong++; note(c, `kind ${kind} took ${Date.now() - t0} ms`); }
      c.clean++;
    } catch (e) {
      c.crashes++;
      note(c, `kind ${kind}: ${(e as Error).message}`);
    }
  }
  if (!fs.readFileSync(real).equals(realBytes)) { c.foreignLoaded++; note(c, 'the file outside the folder was rewritten'); }
  return c;
}

function spawnSyncFifo(f: string): void {
  const r = spawnSync('mkfifo', [f]);
  if (r.status !== 0) throw new Error('mkfifo failed');
}

// ---- the server under test -------------------------------------------------------------------

interface Server { p: ChildProcess; base: string; err: string[]; exited: boolean }

async function startServer(extra: string[] = []): Promise<Server> {
  const p = spawn(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36-server.js'), '-m', MODEL, '--cpu', '--port', '0', '--ctx', '2048',
    '--max-tokens', '16', '--max-queue', '256', '--request-timeout', '20', '--log-level', 'info', '--max-body-mb', '4',
    '--kv-disk-dir', path.join(TMP, 'server-kv'), '--kv-cache-min-tokens', '64', '--kv-cache-boundary-align-tokens', '64', ...extra]);
  children.add(p);
  const s: Server = { p, base: '', err: [], exited: false };
  p.on('exit', () => { s.exited = true; });
  p.stderr!.on('data', (d) => { s.err.push(String(d)); if (s.err.length > 200) s.err.shift(); });
  p.stdout!.on('data', (d) => { s.err.push(String(d)); if (s.err.length > 200) s.err.shift(); });
  s.base = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`server did not start: ${s.err.join('').slice(-500)}`)); }, 60_000);
    p.stderr!.on('data', () => { const m = /serving on (http:\/\/\S+)/.exec(s.err.join('')); if (m) { clearTimeout(t); resolve(m[1]); } });
    p.on('exit', () => reject(new Error(`server exited: ${s.err.join('')}`)));
  });
  return s;
}

/** Polls GET /v1/models until stopped; counts the failures. */
function modelsPoller(s: Server, c: Count) {
  let stop = false;
  const run = (async () => {
    while (!stop && !s.exited) {
      c.tried++;
      try {
        const r = await fetch(`${s.base}/v1/models`, { signal: AbortSignal.timeout(10_000) });
        if (r.status === 200) c.clean++; else { c.wrong++; note(c, `status ${r.status}`); }
      } catch (e) {
        c.wrong++;
        note(c, `no answer: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return async () => { stop = true; await run; };
}

const VALID: Record<string, unknown> = {
  '/v1/chat/completions': { model: 'x', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, { role: 'tool', tool_call_id: 'call_1', content: 'ok' }, { role: 'user', content: [{ type: 'text', text: 'More' }] }], tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { anyOf: [{ type: 'string' }, { type: 'null' }] } }, required: ['a'] } } }], max_tokens: 4, temperature: 0.5, top_p: 0.9, stop: ['x'], stream: false },
  '/v1/messages': { model: 'x', max_tokens: 4, system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm' }, { type: 'text', text: 'Hello' }, { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'ok' }] }, { type: 'text', text: 'More' }] }], tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: { type: 'integer' } } } }], thinking: { type: 'enabled', budget_tokens: 1024 }, stop_sequences: ['x'] },
  '/v1/responses': { model: 'x', instructions: 'Be brief.', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }, { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' }, { type: 'function_call_output', call_id: 'c1', output: 'ok' }], tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }], max_output_tokens: 4 },
  '/v1/completions': { model: 'x', prompt: 'Once upon a time', max_tokens: 4, temperature: 0, stop: ['\n'] },
};

/** Every path into a JSON value (for mutation). */
function paths(v: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

function weird(): unknown {
  const deep = (n: number) => { let x: unknown = 1; for (let i = 0; i < n; i++) x = [x]; return x; };
  return pick<() => unknown>([
    () => null, () => true, () => -1, () => 0, () => 1e308, () => 2 ** 53 + 1, () => -0.5, () => '', () => 'x'.repeat(rng.int(1000, 200_000)),
    () => '\ud800 lone surrogate', () => '\u0000\u001b[2J\u202e', () => '🙂'.repeat(100), () => [], () => ({}), () => [null], () => ({ a: null }),
    () => deep(rng.int(50, 200)), () => ({ type: 'text' }), () => [{}], () => ({ __proto__: { polluted: true } }), () => 'user', () => 'system', () => [1, 'a', null],
    // a JSON text nested thousands deep as a string (a tool call's arguments), Object.prototype's names as keys
    () => `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`, () => ({ toString: 'x', constructor: 'y', valueOf: 1, hasOwnProperty: null }),
  ])();
}

function mutate(body: unknown): string {
  const b = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
  const kind = rng.int(0, 9);
  if (kind <= 5) {
    const all = paths(b).filter((p) => p.length > 0);
    const p = pick(all);
    let o: Record<string | number, unknown> = b;
    for (const k of p.slice(0, -1)) o = o[k] as Record<string | number, unknown>;
    if (rng.int(0, 4) === 0) delete o[p[p.length - 1]];
    else o[p[p.length - 1]] = weird();
    return JSON.stringify(b);
  }
  if (kind <= 7) {
    const s = Buffer.from(JSON.stringify(b));
    for (let k = rng.int(1, 3); k > 0; k--) s[rng.int(0, s.length - 1)] = rng.int(0, 255); // may break the JSON or the UTF-8
    return s.toString('latin1');
  }
  if (kind === 8) return rng.int(0, 1) ? JSON.stringify(weird()) : JSON.stringify(b).replace(/^\{/, pick(['{"__proto__":{"polluted":true},', '{"constructor":{"prototype":{"polluted":true}},']));
  return JSON.stringify({ ...b, extra: weird(), messages: b.messages ?? weird() });
}

async function httpPhase(s: Server, c: Count): Promise<void> {
  const n = QUICK ? 150 : 2000;
  for (let i = 0; i < n && !s.exited; i++) {
    const url = pick(Object.keys(VALID));
    const body = mutate(VALID[url]);
    c.tried++;
    try {
      const r = await fetch(`${s.base}${url}`, { method: 'POST', headers: { 'content-type': pick(['application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain']) }, body: Buffer.from(body, 'latin1'), signal: AbortSignal.timeout(60_000) });
      const text = await r.text();
      if (r.status >= 500) { c.fivexx++; note(c, `${url} ${r.status} ${text.slice(0, 160)} for ${body.slice(0, 160)}`); }
      else if (r.status >= 400) {
        let shaped = false;
        try { const j = JSON.parse(text); shaped = url === '/v1/messages' ? j.type === 'error' && typeof j.error?.message === 'string' : typeof j.error?.message === 'string'; } catch { /* not JSON */ }
        if (shaped) c.clean++; else { c.wrong++; note(c, `${url} ${r.status} not in the API's error shape: ${text.slice(0, 120)}`); }
      } else c.clean++; // a mutation the API accepts (e.g. an unknown extra field)
    } catch (e) {
      c.crashes++;
      note(c, `${url}: ${(e as Error).message}`);
    }
  }
  if (s.exited) { c.crashes++; note(c, `the server exited: ${s.err.join('').slice(-500)}`); }
}

async function wsPhase(s: Server, c: Count): Promise<void> {
  const frames = (): (string | Buffer)[] => [
    'null', '{}', '[]', '5', '"x"', '{"type":null}', '{"type":"message"}', '{"type":"message","content":""}', '{"type":"message","content":[1]}',
    '{"type":"session.start","tools":[null]}', '{"type":"session.start","max_tokens":"9"}', '{"type":"tool_result","content":{}}', '{"type":"cancel"}',
    '{"type":"continue"}', JSON.stringify({ type: 'message', content: 'x'.repeat(rng.int(1, 50_000)) }), '['.repeat(5000), Buffer.from([0xff, 0xfe, 0x00]),
    mutate({ type: 'session.start', system: 'S', tools: [], thinking: true, max_tokens: 2, temperature: 0 }), mutate({ type: 'message', content: 'Hi' }),
  ];
  const conns = QUICK ? 6 : 40;
  for (let k = 0; k < conns && !s.exited; k++) {
    let sent = 0;
    const ws = new WebSocket(`${s.base.replace('http', 'ws')}/v1/chat/ws`);
    ws.on('message', (d) => { try { JSON.parse(String(d)); } catch { c.wrong++; note(c, 'a frame from the server is not JSON'); } });
    ws.on('error', () => { /* counted through close */ });
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    try {
      await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
      ws.send(JSON.stringify({ type: 'session.start', max_tokens: 2, temperature: 0 }));
      for (let i = 0; i < (QUICK ? 15 : 60) && ws.readyState === ws.OPEN; i++) { ws.send(pick(frames())); sent++; }
      c.tried += sent;
      await new Promise((r) => setTimeout(r, 200));
      if (ws.readyState === ws.OPEN) ws.close(1000);
      const code = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(-1), 10_000))]);
      // every frame was answered (an error frame, or the protocol's reply) or closed the socket by the rules
      if (code === -1) { c.wrong++; note(c, 'socket did not close'); } else if ([1000, 1005, 1008, 1009].includes(code)) c.clean += sent; else { c.wrong++; note(c, `close code ${code}`); }
    } catch (e) {
      c.crashes++;
      note(c, `connection ${k}: ${(e as Error).message}`);
    }
  }
  if (s.exited) { c.crashes++; note(c, 'the server exited'); }
}

/** Greedy answers alone, then under concurrency with random aborts: the same texts, no mix-ups. */
async function clientsPhase(s: Server, c: Count): Promise<void> {
  const nClients = QUICK ? 32 : 64;
  const prompts = Array.from({ length: 8 }, (_, i) => `Request ${i}: tell me about item number ${i * 37 + 11}.`);
  const ask = async (i: number, signal?: AbortSignal) => {
    const r = await fetch(`${s.base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: prompts[i], max_tokens: 8, temperature: 0 }), signal });
    const j = await r.json() as { choices?: { text: string }[]; error?: unknown };
    return { status: r.status, text: j.choices?.[0]?.text };
  };
  const reference: (string | undefined)[] = [];
  for (let i = 0; i < prompts.length; i++) reference[i] = (await ask(i)).text;
  // the same answers again, in reverse order: greedy decoding on the CPU reference is deterministic
  for (let i = prompts.length - 1; i >= 0; i--) if ((await ask(i)).text !== reference[i]) note(c, `reference ${i} is not reproducible`);
  const jobs = Array.from({ length: nClients }, async (_, k) => {
    const i = k % prompts.length;
    const ac = new AbortController();
    const abort = rng.int(0, 3) === 0;
    if (abort) setTimeout(() => ac.abort(), rng.int(0, 400));
    c.tried++;
    const kind = rng.int(0, 2);
    try {
      if (kind === 0) {
        const r = await ask(i, ac.signal);
        if (r.status === 200 && r.text !== reference[i]) { c.wrong++; note(c, `client ${k}: got ${JSON.stringify(r.text)} for prompt ${i}, alone it is ${JSON.stringify(reference[i])}`); }
        else if (r.status >= 500) { c.fivexx++; note(c, `client ${k}: ${r.status}`); } else c.clean++;
      } else {
        const url = kind === 1 ? '/v1/chat/completions' : '/v1/messages';
        const r = await fetch(`${s.base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal, body: JSON.stringify({ messages: [{ role: 'user', content: prompts[i] }], max_tokens: 6, stream: rng.int(0, 1) === 1 }) });
        const text = await r.text();
        if (r.status >= 500) { c.fivexx++; note(c, `client ${k}: ${r.status} ${text.slice(0, 100)}`); } else c.clean++;
      }
    } catch (e) {
      if ((e as Error).name === 'AbortError' || abort) c.clean++; // aborted by us
      else { c.crashes++; note(c, `client ${k}: ${(e as Error).message}`); }
    }
  });
  await Promise.all(jobs);
  if (s.exited) { c.crashes++; note(c, 'the server exited'); }
}

async function kill9Phase(): Promise<Count> {
  const c = newCount();
  const dir = path.join(TMP, 'kill9');
  fs.mkdirSync(dir, { recursive: true });
  const fp = modelIdentity(MODEL);
  const script = path.join(TMP, 'saver.mjs');
  const size = 16 << 20;
  fs.writeFileSync(script, `import { DiskCache } from ${JSON.stringify(path.join(ROOT, 'dist/ts/server/kv-disk/disk-cache.js'))};
const c = new DiskCache({ dir: ${JSON.stringify(dir)}, budgetBytes: 1 << 40, model: { fingerprint: Buffer.from(${JSON.stringify(fp.fingerprint.toString('hex'))}, 'hex'), expertBits: ${fp.expertBits} } });
const payload = new Uint8Array(${size}).fill(7);
for (let i = 0; ; i++) c.save({ reason: 'cold', text: 'kill9 ' + process.pid + ' ' + i, payload, tokens: 1, ctx: 8 });`);
  for (let round = 0; round < (QUICK ? 3 : 10); round++) {
    const child = spawn(process.execPath, [script]);
    await new Promise((r) => setTimeout(r, rng.int(300, 1500)));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    const cache = new DiskCache({ dir, budgetBytes: 1 << 40, model: fp });
    for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.kv'))) {
      c.tried++;
      const loaded = cache.load(path.join(dir, f));
      if (!loaded) c.clean++; // refused (and removed) is fine
      else if (loaded.payload.length !== size || loaded.payload.some((b) => b !== 7)) { c.foreignLoaded++; note(c, `${f}: a partial file loaded`); }
      else c.clean++;
    }
    if (fs.readdirSync(dir).some((x) => x.endsWith('.tmp'))) { c.wrong++; note(c, 'a temp file survived the restart'); }
    for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f), { force: true }); // keep the disk use bounded
  }
  return c;
}

/**
 * q36 download against a server that misbehaves in a random way per request. Each download must
 * end within a few seconds (the idle timeout is 300 ms here) either with the exact file or with a
 * clean error; a finished file with other bytes, a hang or a JS fault counts against it.
 */
async function downloadPhase(): Promise<Count> {
  const c = newCount();
  const name = MODELS['q2-imatrix'];
  const good = Buffer.from(Array.from({ length: 96 << 10 }, (_, i) => (i * 131 + 7) & 255));
  const sha = createHash('sha256').update(good).digest('hex');
  const MODES = ['good', 'silent', 'stall-body', 'redirect-loop', 'redirect-hop', 'short', 'wrong-sha', 'chunked-no-hash', 'bad-range', 'http-500', 'http-403'] as const;
  let mode: (typeof MODES)[number] = 'good';
  const held: http.ServerResponse[] = [];
  const srv = http.createServer((req, res) => {
    const tag = { 'x-linked-etag': `"${sha}"`, etag: '"v1"' };
    switch (mode) {
      case 'good': res.writeHead(200, { 'content-length': good.length, ...tag }); res.end(good); return;
      case 'silent': held.push(res); return; // never answers
      case 'stall-body': res.writeHead(200, { 'content-length': good.length, ...tag }); res.write(good.subarray(0, 1000)); held.push(res); return;
      case 'redirect-loop': res.writeHead(302, { location: req.url }); res.end(); return;
      case 'redirect-hop':
        if (req.url!.startsWith('/hop/')) { res.writeHead(200, { 'content-length': good.length, ...tag }); res.end(good); return; }
        res.writeHead(302, { location: `/hop${req.url}` }); res.end(); return;
      case 'short': res.writeHead(200, { 'content-length': good.length, ...tag }); res.end(good.subarray(0, 5000)); res.socket?.destroy(); return;
      case 'wrong-sha': res.writeHead(200, { 'content-length': good.length, 'x-linked-etag': `"${'0'.repeat(64)}"` }); res.end(good); return;
      case 'chunked-no-hash': res.writeHead(200, {}); res.end(good.subarray(0, 2000)); return;
      case 'bad-range':
        if (req.headers.range) { res.writeHead(206, { 'content-range': 'bytes 0-10/20', ...tag }); res.end(good.subarray(0, 11)); return; }
        res.writeHead(200, { 'content-length': good.length, ...tag }); res.write(good.subarray(0, 3000)); res.socket?.destroy(); return;
      case 'http-500': res.writeHead(500); res.end('no'); return;
      case 'http-403': res.writeHead(403); res.end('gated'); return;
    }
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  const dir = path.join(TMP, 'dl');
  for (let i = 0; i < (QUICK ? 30 : 120); i++) {
    mode = pick(MODES);
    c.tried++;
    const t0 = Date.now();
    try {
      const file = await download({ which: 'q2-imatrix', dir, baseUrl: base, idleTimeoutMs: 300 });
      if (!fs.readFileSync(file).equals(good)) { c.wrong++; note(c, `${mode}: a finished file with other bytes`); }
      else if (mode !== 'good' && mode !== 'redirect-hop') { c.wrong++; note(c, `${mode}: taken as good`); }
      else c.clean++;
      fs.rmSync(file);
    } catch (e) {
      if (e instanceof CliError && /^download: /.test(e.message)) c.clean++;
      else { c.crashes++; note(c, `${mode}: ${(e as Error).stack?.split('\n').slice(0, 2).join(' ')}`); }
    }
    if (Date.now() - t0 > 5000) { c.wrong++; note(c, `${mode} took ${Date.now() - t0} ms`); }
    // a finished file is only ever the exact bytes
    const final = path.join(dir, name);
    if (fs.existsSync(final) && !fs.readFileSync(final).equals(good)) { c.foreignLoaded++; note(c, `${mode}: ${name} left with other bytes`); }
    for (const r of held.splice(0)) r.destroy();
  }
  await new Promise<void>((r) => { srv.closeAllConnections(); srv.close(() => r()); });
  return c;
}

function report(name: string, c: Count): void {
  results.push([name, c]);
  console.log(`${name.padEnd(8)} tried ${String(c.tried).padStart(6)}  clean ${String(c.clean).padStart(6)}  crashes ${c.crashes}  5xx ${c.fivexx}  foreign-loaded ${c.foreignLoaded}  wrong ${c.wrong}`);
  for (const n of c.notes) console.log(`         - ${n}`);
}

async function main(): Promise<number> {
  const t0 = Date.now();
  console.log(`q36 stress${QUICK ? ' (quick)' : ''}: model ${path.relative(process.cwd(), MODEL)}, ${new Date().toISOString()}`);
  report('gguf', ggufPhase());
  report('kvfile', kvFilePhase());
  report('files', filesPhase());
  const s = await startServer();
  const models = newCount();
  const stopPoll = modelsPoller(s, models);
  try {
    const http = newCount(); await httpPhase(s, http); report('http', http);
    const ws = newCount(); await wsPhase(s, ws); report('ws', ws);
    const clients = newCount(); await clientsPhase(s, clients); report('clients', clients);
  } finally {
    await stopPoll();
    report('models', models);
    if (s.exited) { const dead = newCount(); dead.crashes = 1; note(dead, s.err.join('').slice(-800)); report('server', dead); }
    s.p.kill('SIGTERM');
  }
  report('kill9', await kill9Phase());
  report('download', await downloadPhase());
  const total = newCount();
  for (const [, c] of results) for (const k of ['tried', 'clean', 'crashes', 'fivexx', 'foreignLoaded', 'wrong'] as const) total[k] += c[k];
  report('total', total);
  console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s`);
  fs.rmSync(TMP, { recursive: true, force: true });
  return total.crashes + total.fivexx + total.foreignLoaded + total.wrong === 0 ? 0 : 1;
}

// a server left running would outlive the run: every child goes with the process
const children = new Set<ChildProcess>();
process.on('exit', () => { for (const p of children) p.kill('SIGKILL'); });
main().then((code) => process.exit(code), (e) => { console.error(`stress: ${(e as Error).stack}`); process.exit(2); });
