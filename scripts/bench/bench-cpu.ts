/**
 * bench-cpu: CPU (WASM) engine throughput on a model, e.g. the full-size synthetic q2 model with
 * routed experts streamed through the in-WASM LRU cache. Prints prefill and decode tok/s, expert
 * cache hit rate, and WASM heap use.
 *
 *   node dist/scripts/bench/bench-cpu.js -m /tmp/full-q2.gguf --prompt 64 --gen 16 [--ctx 4096] [--expert-cache-mb N]
 */
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import { CpuEngine } from '../../ts/engine/cpu/cpu-engine.js';
import { Rng } from '../../ts/model/synth.js';

const { values: a } = parseArgs({ options: {
  model: { type: 'string', short: 'm' }, prompt: { type: 'string', default: '64' }, gen: { type: 'string', default: '16' },
  ctx: { type: 'string', default: '4096' }, 'expert-cache-mb': { type: 'string' }, ctk: { type: 'string', default: 'f16' }, ctv: { type: 'string', default: 'f16' },
} });
if (!a.model) { console.error('bench-cpu: -m MODEL is required'); process.exit(2); }

const t0 = performance.now();
const e = new CpuEngine({ model: a.model, backend: 'cpu', ctx: Number(a.ctx), kvTypes: { k: a.ctk as 'f16', v: a.ctv as 'f16' }, expertCacheMiB: a['expert-cache-mb'] ? Number(a['expert-cache-mb']) : undefined });
const loadS = (performance.now() - t0) / 1000;
console.log(`# bench-cpu ${a.model}; ${os.cpus()[0].model}, ${os.cpus().length} cores, node ${process.version}, ${new Date().toISOString()}`);
console.log(e.describe());
console.log(`load ${loadS.toFixed(1)} s`);
const rng = new Rng(7);
const prompt = Array.from({ length: Number(a.prompt) }, () => rng.int(0, 200_000 % e.shape.nVocab));
const s = e.newSession();
const snap = () => ({ ...e.weights.stats });
let st0 = snap();
let t = performance.now();
await s.eval(prompt);
const pre = (performance.now() - t) / 1000;
let st1 = snap();
console.log(`prefill ${prompt.length} tokens: ${pre.toFixed(2)} s = ${(prompt.length / pre).toFixed(2)} tok/s; expert hits ${st1.hits - st0.hits}, misses ${st1.misses - st0.misses} (hit rate ${((st1.hits - st0.hits) / Math.max(1, st1.hits - st0.hits + st1.misses - st0.misses) * 100).toFixed(1)}%)`);
st0 = st1;
t = performance.now();
const n = Number(a.gen);
for (let i = 0; i < n; i++) await s.eval([s.sample({ temperature: 0 })]);
const dec = (performance.now() - t) / 1000;
st1 = snap();
console.log(`decode ${n} tokens: ${dec.toFixed(2)} s = ${(n / dec).toFixed(3)} tok/s; expert hits ${st1.hits - st0.hits}, misses ${st1.misses - st0.misses} (hit rate ${((st1.hits - st0.hits) / Math.max(1, st1.hits - st0.hits + st1.misses - st0.misses) * 100).toFixed(1)}%), ${((st1.bytesRead - st0.bytesRead) / 2 ** 20 / n).toFixed(1)} MiB read per token`);
console.log(`wasm heap ${((e.core.x.heapTop() >>> 0) / 2 ** 30).toFixed(3)} GiB (limit 4 GiB), memory.buffer ${(e.core.memory.buffer.byteLength / 2 ** 30).toFixed(3)} GiB`);
