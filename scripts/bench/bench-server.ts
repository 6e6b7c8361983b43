/**
 * bench-server: aggregate decode throughput of q36-server --batched-session as clients see it —
 * N clients at once, each a /v1/completions request over loopback (the whole path: HTTP, turn
 * core, slots, the executor's coalescing, batched steps, detokenizing).
 *
 *   node dist/scripts/bench/bench-server.js -m /tmp/full-q2.gguf [--slots 8] [--clients 1,2,4,8] [--gen 128] [--backend vulkan] [--whole]
 *   (where node_modules is absent, e.g. the GPU machine: bundle it first with
 *    npx esbuild dist/scripts/bench/bench-server.js --bundle --platform=node --format=esm --outfile=dist/scripts/bench-server.bundle.mjs
 *      --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);")
 *
 * Each client streams its own short prompt's completion (max_tokens --gen, temperature 0);
 * aggregate t/s = the tokens (content chunks) all clients received while every one of them was
 * generating, over that window's length (prefills and tails excluded); per client = its tokens
 * from its first to its last. Each count runs once untimed first (it records the batched steps
 * for that set of slots).
 */
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import { openEngine } from '../../ts/engine/index.js';
import { envEngineOptions } from '../../ts/cli/env.js';
import { MAX_BATCH_ROWS } from '../../ts/engine/defaults.js';
import { buildApp } from '../../ts/server/app.js';
import { sseEvents } from '../lib/sse-events.js';

const { values: a } = parseArgs({ options: {
  model: { type: 'string', short: 'm' }, slots: { type: 'string', default: '8' }, clients: { type: 'string', default: '1,2,4,8' },
  gen: { type: 'string', default: '128' }, backend: { type: 'string', default: 'vulkan' }, ctx: { type: 'string', default: '1024' },
  whole: { type: 'boolean' },
} });
if (!a.model) { console.error('bench-server: -m MODEL is required'); process.exit(2); }
const slots = Number(a.slots), gen = Number(a.gen), counts = a.clients!.split(',').map(Number);
const engine = await openEngine({
  ...envEngineOptions(), model: a.model, backend: a.backend as 'vulkan' | 'cpu', ctx: Number(a.ctx),
  kvTypes: { k: 'q8_0', v: 'q4_0' }, sessions: slots, batchRows: Math.min(slots, MAX_BATCH_ROWS),
});
const { app, ctx } = await buildApp({ engine, slots, maxQueue: 64, defaultMaxTokens: gen, cacheRamMiB: 0 });
const base = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`# bench-server ${a.model}; ${new Date().toISOString()}; host ${os.cpus()[0].model}; node ${process.version}`);
console.log(engine.describe());
console.log(`slots ${slots}, ${gen} tokens per request, greedy, kv q8_0/q4_0`);

const WORDS = ['river', 'lamp', 'stone', 'cloud', 'garden', 'engine', 'letter', 'winter', 'harbor', 'violin', 'forest', 'signal'];
let serial = 0;
/** One streamed request: the arrival time of each content chunk (≈ one token each). */
async function one(): Promise<number[]> {
  const k = serial++;
  const prompt = `Story ${k}: the ${WORDS[k % WORDS.length]} and the ${WORDS[(k * 7 + 3) % WORDS.length]} met at`;
  const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', prompt, max_tokens: gen, temperature: 0, stream: true }) });
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const times: number[] = [];
  for await (const ev of sseEvents(r.body!)) if (ev.startsWith('data: {') && /"text":"[^"]/.test(ev)) times.push(performance.now());
  return times;
}

/** One whole (not streamed) request: its completion tokens and time. */
async function whole(): Promise<{ tokens: number; ms: number }> {
  const k = serial++;
  const prompt = `Story ${k}: the ${WORDS[k % WORDS.length]} and the ${WORDS[(k * 7 + 3) % WORDS.length]} met at`;
  const t = performance.now();
  const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', prompt, max_tokens: gen, temperature: 0 }) });
  const j = await r.json() as { usage?: { completion_tokens: number }; error?: { message: string } };
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${j.error?.message}`);
  return { tokens: j.usage!.completion_tokens, ms: performance.now() - t };
}

for (const n of a.whole ? counts : []) {
  // --whole: aggregate = all completion tokens / the wall time from the first request to the last
  // answer (each request's prefill included, and the recording of a prefill step for each new
  // prompt length)
  await Promise.all(Array.from({ length: n }, whole));
  const s0 = { ...ctx.coordinator.exec.stats };
  const t = performance.now();
  const rs = await Promise.all(Array.from({ length: n }, whole));
  const wall = (performance.now() - t) / 1000;
  const tokens = rs.reduce((x, r) => x + r.tokens, 0);
  const per = rs.map((r) => r.tokens / (r.ms / 1000));
  const x = ctx.coordinator.exec.stats, steps = x.steps - s0.steps, rows = x.rows - s0.rows;
  console.log(`clients ${n}: ${(tokens / wall).toFixed(1)} t/s aggregate (${tokens} tokens in ${wall.toFixed(2)} s), per client ${Math.min(...per).toFixed(1)}-${Math.max(...per).toFixed(1)} t/s; ${steps} decode steps, ${(rows / Math.max(1, steps)).toFixed(2)} sessions per step`);
}

for (const n of a.whole ? [] : counts) {
  await Promise.all(Array.from({ length: n }, one)); // untimed: records this count's batched steps
  const s0 = { ...ctx.coordinator.exec.stats };
  const rs = await Promise.all(Array.from({ length: n }, one));
  // the window in which every client was generating (prefills, queueing and the tails excluded):
  // chunks inside it over its length
  const from = Math.max(...rs.map((t) => t[0])), to = Math.min(...rs.map((t) => t[t.length - 1]));
  const inside = rs.reduce((x, t) => x + t.filter((v) => v > from && v <= to).length, 0);
  const per = rs.map((t) => (t.length - 1) / ((t[t.length - 1] - t[0]) / 1000));
  const x = ctx.coordinator.exec.stats, steps = x.steps - s0.steps, rows = x.rows - s0.rows;
  console.log(`clients ${n}: ${(inside / ((to - from) / 1000)).toFixed(1)} t/s aggregate while all generate (${inside} tokens in ${((to - from) / 1000).toFixed(2)} s), per client ${Math.min(...per).toFixed(1)}-${Math.max(...per).toFixed(1)} t/s first to last token; ${steps} decode steps, ${(rows / Math.max(1, steps)).toFixed(2)} sessions per step`);
}
await app.close();
ctx.coordinator.dispose();
engine.dispose();
