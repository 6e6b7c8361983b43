/**
 * bench-levels: what a dependency level costs on this device, apart from the work in it (#17: a
 * decode step is ~10 barrier-separated levels per layer of short kernels).
 *
 *   node dist/scripts/bench/bench-levels.js [--vk-device N] [--n 400] [-m MODEL --frontier 2048 --gen 32 [--drop 'rmsnorm;ssm_conv,kv_store']]
 *
 * 1. Chains of N tiny dispatches in one command (wall time of the whole submission / N): with a
 *    barrier after each (each waits for the last), and without (they may overlap); one workgroup
 *    and 2048 workgroups (the width of a decode matvec).
 * 2. With -m: the decode step of the model as recorded (barriers between levels) and the same
 *    step with every barrier dropped. Without barriers the step computes garbage (kernels race
 *    their inputs): only its time is meaningful — the difference is what the levels cost.
 * 3. With --drop: the decode step without the dispatches of the named shaders (';' separates
 *    variants, ',' names several shaders dropped together; a name matches its typed variants:
 *    kv_store drops kv_store_q8_0 and kv_store_q4_0). The bound on what fusing those kernels
 *    away could save; the results are garbage (the prompt is prefilled with every kernel).
 */
import { parseArgs } from 'node:util';
import { OpList, Pipelines } from '../../ts/engine/vulkan/graph.js';
import { KERNELS, dispatch } from '../../ts/engine/vulkan/kernels.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { openEngine } from '../../ts/engine/index.js';
import type { VkEngine } from '../../ts/engine/vulkan/vk-engine.js';
import { Rng } from '../../ts/model/synth.js';
import { median } from '../lib/stats.js';

const a = parseArgs({ options: {
  'vk-device': { type: 'string', default: '-1' }, n: { type: 'string', default: '400' }, model: { type: 'string', short: 'm' },
  frontier: { type: 'string', default: '2048' }, gen: { type: 'string', default: '32' }, drop: { type: 'string' },
} }).values;
const N = Number(a.n), devIndex = Number(a['vk-device']);

{
  const dev = new (loadAddon().Device)(devIndex);
  const pipes = new Pipelines(dev);
  console.log(`# bench-levels ${new Date().toISOString()}; ${dev.info().name}`);
  const src = dev.createBuffer(1 << 20, false), dst = dev.createBuffer(1 << 20, false);
  for (const wgs of [1, 2048]) {
    for (const barrier of [true, false]) {
      const ops = new OpList(pipes);
      // each workgroup copies 16 bytes per thread: no work to speak of
      for (let i = 0; i < N; i++) dispatch(ops, KERNELS.copy, { SRC: src, DST: dst }, { n4: Math.min(wgs * 256, 65536) }, [wgs], { barrier });
      const cmd = dev.record(ops.build(), false);
      for (let i = 0; i < 3; i++) dev.runSync(cmd);
      const t: number[] = [];
      for (let r = 0; r < 20; r++) { const t0 = performance.now(); dev.runSync(cmd); t.push(performance.now() - t0); }
      dev.freeCommand(cmd);
      console.log(`chain of ${N} dispatches × ${wgs} workgroup(s), ${barrier ? 'barrier after each' : 'no barriers'}: ${median(t).toFixed(3)} ms = ${((median(t) * 1000) / N).toFixed(2)} µs per dispatch`);
    }
  }
  dev.freeBuffer(src); dev.freeBuffer(dst);
  dev.dispose();
}

const engineOpts = (ctx: number) => ({ model: a.model!, backend: 'vulkan' as const, ctx, kvTypes: { k: 'q8_0' as const, v: 'q4_0' as const }, vkDevice: devIndex >= 0 ? devIndex : undefined });
const gen = Number(a.gen), fr = Number(a.frontier);
const op = OpList.prototype.op;

/**
 * A new session's decode at the frontier, printed as `decode at F, label: …`: the prompt, then
 * `afterPrompt` (where the drop variants patch OpList, so only the decode step is recorded
 * without their kernels), two untimed steps (the first records the decode step), `gen` timed.
 */
async function timeDecode(e: VkEngine, label: () => string, afterPrompt?: () => void): Promise<void> {
  const rng = new Rng(3);
  const s = e.newSession();
  await s.eval(Array.from({ length: fr }, () => rng.int(0, 1000)));
  afterPrompt?.();
  for (let i = 0; i < 2; i++) await s.eval([i + 1]);
  const run0 = e.runMs, t0 = performance.now();
  for (let i = 0; i < gen; i++) await s.eval([(i * 31) % 1000 + 1]);
  const ms = (performance.now() - t0) / gen, inRun = (e.runMs - run0) / gen;
  console.log(`decode at ${fr}, ${label()}: ${ms.toFixed(3)} ms/token (${inRun.toFixed(3)} ms in dev.run) = ${(1000 / ms).toFixed(1)} tok/s`);
  s.dispose();
}

if (a.model) {
  for (const barriers of [true, false]) {
    // drop every barrier the step asks for (timing only: the results race)
    OpList.prototype.op = function (this: OpList, shader, buffers, push, groups, barrier, label) {
      return op.call(this, shader, buffers, push, groups, barriers ? barrier : false, label);
    };
    const e = await openEngine(engineOpts(fr + gen + 8)) as VkEngine;
    await timeDecode(e, () => (barriers ? 'as recorded' : 'every barrier dropped (garbage results)'));
    e.dispose();
  }
  OpList.prototype.op = op;
}

if (a.model && a.drop) {
  const e = await openEngine(engineOpts(fr + gen + 8)) as VkEngine;
  for (const variant of ['', ...a.drop.split(';')]) {
    const names = variant.split(',').map((x) => x.trim()).filter((x) => x);
    let dropped = 0;
    // the prompt with every kernel; the decode step (recorded at its first eval) without the named ones
    await timeDecode(e, () => (names.length ? `without ${names.join(' + ')} (${dropped} dispatches dropped; garbage results)` : 'every kernel'), () => {
      OpList.prototype.op = function (this: OpList, shader, buffers, push, groups, barrier, label) {
        if (names.some((n) => shader === n || shader.startsWith(`${n}_`))) { dropped++; return this; }
        return op.call(this, shader, buffers, push, groups, barrier, label);
      };
    });
    OpList.prototype.op = op;
  }
  e.dispose();
}
