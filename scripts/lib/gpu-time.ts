/**
 * GPU seconds of one dispatch, as the isolated kernel benchmarks (bench-matvec-bw, bench-mvq) take
 * them: `reps` copies recorded back to back in one command (a barrier after each, so they do not
 * overlap), each timed by timestamps; the median. One command keeps the GPU busy the way a decode
 * step does: dispatches run one at a time with the host waiting in between leave the clocks low
 * (the first H200 run of bench-matvec-bw, 2026-12-01 15:42, did that: SM clock 345 MHz after it,
 * kernels 2-5× slower than inside a decode step).
 */
import { OpList, type Pipelines } from '../../ts/engine/vulkan/graph.js';
import type { VkDevice } from '../../ts/vk/addon.js';
import { median } from './stats.js';

export interface GpuTimeOptions {
  dev: VkDevice;
  pipes: Pipelines;
  reps: number;
  /**
   * ms of warm-up runs before the timed one (first touch, and clocks: the host filling a weight
   * leaves the GPU idle for seconds, and two runs of a few ms were still ramping — the K-quant LM
   * heads, 2026-12-01 23:11, 5-15× slower than Q8_0's per weight, about the 345 MHz / 1980 MHz of
   * an idle H200)
   */
  warmMs: number;
}

/** The median seconds of the dispatch `build` records (rep: which copy), and the shader names it ran. */
export function gpuTime(o: GpuTimeOptions, build: (ops: OpList, rep: number) => void): { seconds: number; names: string[] } {
  const ops = new OpList(o.pipes);
  for (let i = 0; i < o.reps; i++) build(ops, i);
  const names = ops.names.slice();
  const cmd = o.dev.record(ops.build(), true);
  const t0 = performance.now();
  do o.dev.runSync(cmd); while (performance.now() - t0 < o.warmMs);
  o.dev.runSync(cmd);
  const t = Array.from(o.dev.timings(cmd), (ns) => ns / 1e9);
  o.dev.freeCommand(cmd);
  return { seconds: median(t), names };
}
