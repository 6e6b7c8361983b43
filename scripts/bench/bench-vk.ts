/**
 * bench-vk: Vulkan prefill and decode throughput at context frontiers, with decode also reported
 * as a fraction of the memory-bandwidth floor (bytes a step must read / measured bandwidth).
 *
 *   node dist/scripts/bench/bench-vk.js -m /tmp/full-q2.gguf --frontiers 2048,10240,32768 --gen 32 [--bandwidth 4.3e12]
 *     [--temp 0.6 --top-k 20 --top-p 0.95]   (decode sampling; default greedy)
 *     [--attn-flash]   (prefill attention per token, the kernel before attn_tile: A/B runs)
 *     [--reps 3]       (each --prefill size timed this many times from empty in one session, after
 *                       its first prompt, which also records the step: the median)
 */
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import { openEngine } from '../../ts/engine/index.js';
import { envEngineOptions } from '../../ts/cli/env.js';
import type { VkEngine } from '../../ts/engine/vulkan/vk-engine.js';
import type { KvType } from '../../ts/engine/types.js';
import { readGguf } from '../../ts/gguf/index.js';
import { Rng } from '../../ts/model/synth.js';
import { decodeBytes } from './bytes-per-token.js';

const { values: a } = parseArgs({ options: {
  model: { type: 'string', short: 'm' }, frontiers: { type: 'string', default: '2048' }, gen: { type: 'string', default: '32' },
  prefill: { type: 'string', default: '512,2048' }, bandwidth: { type: 'string', default: '4.3e12' }, ctk: { type: 'string', default: 'q8_0' }, ctv: { type: 'string', default: 'q4_0' },
  chunk: { type: 'string' }, temp: { type: 'string', default: '0' }, 'top-k': { type: 'string', default: '20' },
  'top-p': { type: 'string', default: '0.95' }, 'attn-flash': { type: 'boolean' }, reps: { type: 'string', default: '3' },
} });
const sampling = { temperature: Number(a.temp), topK: Number(a['top-k']), topP: Number(a['top-p']), minP: 0 };
if (!a.model) { console.error('bench-vk: -m MODEL is required'); process.exit(2); }
const frontiers = a.frontiers!.split(',').map(Number);
const ctx = Math.max(...frontiers, ...a.prefill!.split(',').map(Number)) + Number(a.gen) + 8;
const kv = { k: a.ctk as KvType, v: a.ctv as KvType };
const t0 = performance.now();
const e = await openEngine({ ...envEngineOptions(), model: a.model, backend: 'vulkan', ctx, kvTypes: kv, chunk: a.chunk ? Number(a.chunk) : undefined, vkAttnTile: a['attn-flash'] ? false : undefined });
const vk = e as VkEngine;
console.log(`# bench-vk ${a.model}; ${new Date().toISOString()}; host ${os.cpus()[0].model}; node ${process.version}`);
console.log(e.describe());
console.log(`load ${((performance.now() - t0) / 1000).toFixed(1)} s, ctx ${ctx}, chunk ${vk.chunk}; decode sampling ${sampling.temperature > 0 ? `temp ${sampling.temperature} top-k ${sampling.topK} top-p ${sampling.topP}` : 'greedy'}`);
const f = readGguf(a.model);
const rng = new Rng(3);
const tokens = Array.from({ length: ctx }, () => rng.int(0, Math.min(e.shape.nVocab, 200000) - 1));
const bw = Number(a.bandwidth);

for (const n of a.prefill!.split(',').map(Number)) {
  const w = e.newSession();
  await w.eval(tokens.slice(0, 64)); // warm-up: pipelines, first-touch
  w.dispose();
  // a new session's first prompt also creates its buffers and records its step (host work a
  // server's slots do once); the timed ones run in that session again from empty, as
  // llama-bench's repetitions run in one context
  const s2 = e.newSession();
  const empty = s2.snapshot();
  let t = performance.now(), run0 = vk.runMs;
  await s2.eval(tokens.slice(0, n));
  const fresh = { ms: performance.now() - t, run: vk.runMs - run0 };
  // one prompt's time varies by a few percent from run to run (clocks, the host): the median
  const secs: number[] = [], runs: number[] = [];
  for (let r = 0; r < Math.max(1, Number(a.reps)); r++) {
    s2.restore(empty);
    t = performance.now(); run0 = vk.runMs;
    await s2.eval(tokens.slice(0, n));
    secs.push((performance.now() - t) / 1000);
    runs.push(vk.runMs - run0);
  }
  s2.dispose();
  const mid = [...secs.keys()].sort((x, y) => secs[x] - secs[y])[secs.length >> 1], sec = secs[mid];
  console.log(`prefill ${n} tokens: ${sec.toFixed(3)} s = ${(n / sec).toFixed(1)} tok/s (median of ${secs.length}: ${secs.map((x) => (n / x).toFixed(0)).join(', ')}; ` +
    `${runs[mid].toFixed(1)} ms in dev.run, ${(sec * 1000 - runs[mid]).toFixed(1)} ms host); a new session's first: ${(n / fresh.ms * 1000).toFixed(1)} tok/s ` +
    `(${fresh.run.toFixed(1)} ms in dev.run, ${(fresh.ms - fresh.run).toFixed(1)} ms host)`);
}

// time inside dev.run (submit → fence, VkEngine.runMs): the rest of a decode step is host work
// (embedding, logits read-back, sampling, session bookkeeping)
const s = e.newSession();
let pos = 0;
for (const fr of frontiers) {
  let t = performance.now();
  await s.eval(tokens.slice(pos, fr));
  const pre = (performance.now() - t) / 1000;
  const added = fr - pos;
  pos = fr;
  const snap = s.snapshot();
  // two untimed decode steps first, sampling as the timed ones do: the first records the decode
  // command, and with top-k sampling the second records the one that runs the top-k stages too
  // (a one-off each: a step sampled with k brings k pairs from then on)
  await s.eval([s.sample(sampling)]);
  await s.eval([s.sample(sampling)]);
  s.restore(snap);
  const gen = Number(a.gen);
  t = performance.now();
  const run0 = vk.runMs;
  s.seed(1);
  for (let i = 0; i < gen; i++) await s.eval([s.sample(sampling)]);
  const dec = (performance.now() - t) / 1000;
  const inRun = (vk.runMs - run0) / gen;
  const b = decodeBytes(f, e.shape, fr + gen / 2, kv);
  const floor = (b.weights + b.kv) / bw;
  const tps = gen / dec;
  console.log(`frontier ${fr}: prefill +${added} tokens ${(added / pre).toFixed(1)} tok/s; decode ${gen} tokens ${tps.toFixed(1)} tok/s ` +
    `(${((dec / gen) * 1000).toFixed(2)} ms/token; bytes/token ${((b.weights + b.kv) / 1e9).toFixed(3)} GB → floor ${(floor * 1000).toFixed(3)} ms = ${(1 / floor).toFixed(0)} tok/s; ${((floor / (dec / gen)) * 100).toFixed(1)}% of floor; ` +
    `${inRun.toFixed(2)} ms in dev.run, ${((dec / gen) * 1000 - inRun).toFixed(2)} ms host)`);
  s.restore(snap); // decode wrote KV rows ≥ fr only: the snapshot is still valid
}
e.dispose();
