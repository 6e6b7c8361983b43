/**
 * profile-vk: GPU time per shader for one prefill chunk and one decode step (Vulkan timestamps
 * after every dispatch), to see where a step's time goes; the prefill runs twice, the second profiled.
 *
 *   node dist/scripts/bench/profile-vk.js -m /tmp/full-q2.gguf [--ctx 4096] [--prefill 1024] [--chunk N] [--draft-rows 2,5]
 * (--ctx 32771 --prefill 32768: the last prefill step is the 2048 tokens at depth 30720;
 * --draft-rows: a draft step of each of those row counts too, speculative decoding's step)
 */
import { envEngineOptions } from '../../ts/cli/env.js';
import { parseArgs } from 'node:util';
import { openEngine } from '../../ts/engine/index.js';
import type { VkEngine } from '../../ts/engine/vulkan/vk-engine.js';

const { values: a } = parseArgs({ options: { model: { type: 'string', short: 'm' }, ctx: { type: 'string', default: '4096' }, prefill: { type: 'string', default: '1024' }, chunk: { type: 'string' }, 'draft-rows': { type: 'string' } } });
const draftRows = a['draft-rows'] ? a['draft-rows'].split(',').map(Number) : [];
if (draftRows.some((r) => !(Number.isInteger(r) && r >= 1 && r <= 8))) { console.error(`profile-vk: --draft-rows ${a['draft-rows']}: row counts 1..8`); process.exit(2); }
if (!a.model) { console.error('profile-vk: -m MODEL is required'); process.exit(2); }
// the decode steps after the prefill need 3 positions of their own (and the draft steps theirs)
if (!(Number(a.prefill) >= 1 && Number(a.prefill) + 3 + 2 * draftRows.reduce((x, y) => x + y, 0) <= Number(a.ctx))) { console.error(`profile-vk: --prefill ${a.prefill} must be at least 1 and leave 3 positions of --ctx ${a.ctx} for the decode steps`); process.exit(2); }
const e = await openEngine({ ...envEngineOptions(), model: a.model, backend: 'vulkan', ctx: Number(a.ctx), vkProfile: true, chunk: a.chunk ? Number(a.chunk) : undefined, draftMax: draftRows.length ? Math.max(...draftRows) - 1 : undefined }) as VkEngine;
const n = Number(a.prefill);
const toks = Array.from({ length: n }, (_, i) => (i * 7919) % 1000);
// the same prefill once before, in a session of its own: the clocks up and every buffer touched,
// as in bench-vk's timings (a cold first step read ~200 ms more on the H100)
{
  const w = e.newSession();
  await w.eval(toks);
  w.dispose();
}
const s = e.newSession();
await s.eval(toks);
const show = (title: string) => {
  const p = e.profile();
  const total = p.reduce((x, y) => x + y.ms, 0);
  console.log(`${title}: ${total.toFixed(3)} ms GPU in ${p.reduce((x, y) => x + y.count, 0)} dispatches`);
  for (const r of p) console.log(`  ${r.shader.padEnd(22)} ${r.ms.toFixed(3).padStart(9)} ms  ${String(r.count).padStart(5)}×  ${((100 * r.ms) / total).toFixed(1).padStart(5)}%`);
};
show(`last prefill step (up to ${e.chunk} tokens)`);
for (let i = 0; i < 3; i++) await s.eval([s.sample({ temperature: 0 })]);
show('decode step (1 token)');
for (const rows of draftRows) {
  // twice: the first records the step
  for (let i = 0; i < 2; i++) {
    const first = s.sample({ temperature: 0 });
    await s.evalDraft([first, ...Array.from({ length: rows - 1 }, (_, j) => (j * 31 + 7) % 1000)]);
    await s.keepDraft(rows);
  }
  show(`draft step (${rows} rows of one session)`);
}
// host-side sampling costs with the row still on the device (each call re-runs the device work)
const time = (label: string, f: () => void) => {
  f();
  const t = performance.now();
  for (let i = 0; i < 20; i++) f();
  console.log(`${label}: ${((performance.now() - t) / 20).toFixed(3)} ms per call`);
};
time('sample greedy (device arg-max)', () => s.sample({ temperature: 0 }));
time('GPU top-k 20 (submit, wait, read 20 pairs)', () => e.out.topK(20));
time('sample temp 0.6 top-k 20 top-p 0.95 (GPU top-k + sampler over 20)', () => s.sample({ temperature: 0.6, topK: 20, topP: 0.95 }));
// where a decode step's host time goes: embedding, the awaited run (GPU + thread hop), sampling
{
  const acc = { embed: 0, run: 0, sample: 0, total: 0 };
  const embed = e.embed.bind(e), run0 = e.runMs;
  e.embed = (t: number[]) => { const t0 = performance.now(); const r = embed(t); acc.embed += performance.now() - t0; return r; };
  const N = 30;
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const id = s.sample({ temperature: 0 });
    acc.sample += performance.now() - t0;
    await s.eval([id]);
    acc.total += performance.now() - t0;
  }
  e.embed = embed;
  acc.run = e.runMs - run0; // VkEngine.runMs: submit to fence, measured around dev.run
  const ms = (x: number) => (x / N).toFixed(3);
  console.log(`decode step host split (ms/token over ${N}): total ${ms(acc.total)}, dev.run ${ms(acc.run)}, embed ${ms(acc.embed)}, sample ${ms(acc.sample)}, other ${ms(acc.total - acc.run - acc.embed - acc.sample)}`);
}
const row = s.logits(), rng = e.core.alloc(8);
time('sample temp 0.6 top-k 20 top-p 0.95 over the read-back row (host)', () => e.sampleWith(row, { temperature: 0.6, topK: 20, topP: 0.95 }, rng));
e.dispose();
