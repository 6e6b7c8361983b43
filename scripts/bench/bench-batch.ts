/**
 * bench-batch: aggregate decode throughput of several sessions advanced together (evalBatch:
 * q36-server --batched-session's step), against one session alone.
 *
 *   node dist/scripts/bench/bench-batch.js -m /tmp/full-q2.gguf [--sessions 1,2,4,8] [--prompt 512] [--gen 64]
 *     [--ctk q8_0 --ctv q4_0] [--temp 0.6 --top-k 20 --top-p 0.95]   (default greedy)
 *     [--profile]   (Vulkan: GPU time per shader of each count's last step, from timestamps)
 *     [--check]     (greedy: afterwards each batched session is decoded again alone from its
 *                    prompt; its tokens must be the batched ones: a row must not depend on its
 *                    batch-mates. Exit code 1 when any differs)
 *
 * Each session gets its own random prompt of --prompt tokens (prefilled alone, not timed), then
 * --gen steps in which every session samples its next token and all of them are evaluated by
 * one evalBatch call. Aggregate t/s = sessions × steps / time; per-session t/s = steps / time.
 */
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import { evalBatch, batchedNatively } from '../../ts/engine/batch.js';
import { generate } from '../../ts/engine/generate.js';
import { MAX_BATCH_ROWS } from '../../ts/engine/defaults.js';
import { openEngine, type KvType, type Session } from '../../ts/engine/index.js';
import { envEngineOptions } from '../../ts/cli/env.js';
import { Rng } from '../../ts/model/synth.js';
import type { VkEngine } from '../../ts/engine/vulkan/vk-engine.js';

const { values: a } = parseArgs({ options: {
  model: { type: 'string', short: 'm' }, sessions: { type: 'string', default: '1,2,4,8' }, prompt: { type: 'string', default: '512' },
  gen: { type: 'string', default: '64' }, ctk: { type: 'string', default: 'q8_0' }, ctv: { type: 'string', default: 'q4_0' },
  temp: { type: 'string', default: '0' }, 'top-k': { type: 'string', default: '20' }, 'top-p': { type: 'string', default: '0.95' },
  backend: { type: 'string', default: 'vulkan' }, profile: { type: 'boolean' }, check: { type: 'boolean' },
} });
if (!a.model) { console.error('bench-batch: -m MODEL is required'); process.exit(2); }
const counts = a.sessions!.split(',').map(Number);
if (counts.some((n) => !(n >= 1 && n <= MAX_BATCH_ROWS))) { console.error(`bench-batch: --sessions takes 1..${MAX_BATCH_ROWS}`); process.exit(2); }
const prompt = Number(a.prompt), gen = Number(a.gen);
const sampling = { temperature: Number(a.temp), topK: Number(a['top-k']), topP: Number(a['top-p']), minP: 0 };
const e = await openEngine({
  ...envEngineOptions(), model: a.model, backend: a.backend as 'vulkan' | 'cpu', ctx: prompt + gen + 16,
  kvTypes: { k: a.ctk as KvType, v: a.ctv as KvType }, batchRows: Math.max(...counts), vkProfile: a.profile === true,
});
console.log(`# bench-batch ${a.model}; ${new Date().toISOString()}; host ${os.cpus()[0].model}; node ${process.version}`);
console.log(e.describe());
console.log(`prompt ${prompt} tokens per session, ${gen} decode steps; ${sampling.temperature > 0 ? `temp ${sampling.temperature} top-k ${sampling.topK} top-p ${sampling.topP}` : 'greedy'}; kv ${a.ctk}/${a.ctv}`);
if (a.check && sampling.temperature > 0) { console.error('bench-batch: --check compares greedy tokens (--temp 0)'); process.exit(2); }
const rng = new Rng(7);
const vocab = Math.min(e.shape.nVocab, 200000);
let mismatches = 0;

for (const n of counts) {
  const sessions: Session[] = [], prompts: number[][] = [], tokens: number[][] = [];
  for (let i = 0; i < n; i++) {
    const s = e.newSession();
    prompts.push(Array.from({ length: prompt }, () => rng.int(0, vocab - 1)));
    await s.eval(prompts[i]);
    s.seed(i + 1);
    sessions.push(s);
    tokens.push([]);
  }
  const step = async () => {
    const items = sessions.map((session, i) => { const token = session.sample(sampling); tokens[i].push(token); return { session, token }; });
    await evalBatch(e, items);
  };
  // the first step records the batched command for this set of sessions: untimed
  await step();
  const t = performance.now();
  for (let k = 1; k < gen; k++) await step();
  const sec = (performance.now() - t) / 1000, steps = gen - 1;
  const native = n > 1 && batchedNatively(e, sessions.map((session) => ({ session, token: 0 })));
  console.log(`sessions ${n}: ${(n * steps / sec).toFixed(1)} t/s aggregate, ${(steps / sec).toFixed(1)} t/s per session, ${(1000 * sec / steps).toFixed(2)} ms per step (${n === 1 ? 'one session' : native ? 'native batched step' : 'ordered fallback'})`);
  if (a.profile) {
    const p = (e as VkEngine).profile(), total = p.reduce((x, y) => x + y.ms, 0);
    console.log(`  last step: ${total.toFixed(3)} ms of GPU time in ${p.reduce((x, y) => x + y.count, 0)} dispatches; by shader and weight:`);
    for (const r of p.slice(0, 14)) console.log(`  ${r.ms.toFixed(3).padStart(8)} ms ${(100 * r.ms / total).toFixed(1).padStart(5)}%  ×${String(r.count).padEnd(4)} ${r.shader}`);
  }
  sessions.forEach((s) => s.dispose());
  if (a.check && n > 1) {
    // each session again alone: the same greedy tokens
    let same = 0;
    for (let i = 0; i < n; i++) {
      const s = e.newSession();
      await s.eval(prompts[i]);
      const { tokens: alone } = await generate(s, { maxTokens: tokens[i].length, sampling });
      s.dispose();
      const at = alone.findIndex((t, k) => t !== tokens[i][k]);
      if (at < 0) same++;
      else console.log(`  check: session ${i} of ${n}: token ${at} differs alone (${alone[at]}) and batched (${tokens[i][at]})`);
    }
    mismatches += n - same;
    console.log(`  check: ${same} of ${n} sessions decode the same ${gen} greedy tokens alone as batched`);
  }
}
e.dispose();
if (mismatches) process.exit(1);
