/**
 * The persistent-kernel probe (shaders/grid_sync.comp, #17): can `nWG` workgroups of 256 threads
 * run at once on this device, and what does a device-wide barrier through atomics cost there?
 * Vulkan does not say how many workgroups are resident together, so a persistent decode kernel
 * must find out on the device and fall back to the multi-dispatch step where they are not; this
 * is that check, alone, plus the timing a design needs (bench.ts). An experiment: its shaders are
 * not in the shipped addon; gridPipelines() compiles and adds them (scripts/experiments/lib/shaders.ts).
 */
import type { VkDevice } from '../../../ts/vk/addon.js';
import { OpList, Pipelines } from '../../../ts/engine/vulkan/graph.js';
import { dispatch, type KernelDecl } from '../../../ts/engine/vulkan/kernels.js';
import { addShaders } from '../lib/shaders.js';

const k = <B extends string, P extends string>(d: KernelDecl<B, P>) => d;
/** The probe's kernels (shaders/ here): co-residency and device-wide barriers in one dispatch; a chain of products across them. */
export const GRID_KERNELS = {
  grid_sync: k({ name: 'grid_sync', bindings: ['CTL', 'DATA'], push: ['nWG', 'rounds', 'spinLimit', '_'], local: 256 }),
  grid_chain: k({ name: 'grid_chain', bindings: ['CTL', 'W', 'X'], push: ['nWG', 'rounds', 'spinLimit', 'persist', 'n', 'nMat', 'r0', '_'], local: 256 }),
};
const KERNELS = GRID_KERNELS;

/** The device's pipelines with the probe's kernels (compiled with glslc and added to the addon on first use). */
export async function gridPipelines(dev: VkDevice): Promise<Pipelines> {
  await addShaders('scripts/experiments/grid-sync/shaders', Object.values(GRID_KERNELS).map((d) => d.name));
  return new Pipelines(dev, Object.values(GRID_KERNELS));
}

export interface GridSyncResult {
  /** every workgroup was resident at once (else the dispatch gave up and says so) */
  coResident: boolean;
  /** the rounds' values were all seen by the next round (DATA all `rounds`), where coResident */
  consistent: boolean;
  /** GPU seconds of the dispatch (timestamps) */
  seconds: number;
}

export interface GridSyncOptions {
  dev: VkDevice;
  pipes: Pipelines;
  nWG: number;
  rounds: number;
  /**
   * polls of a counter before a wait gives up (the bound on a dispatch that cannot finish; below
   * 65535, where lavapipe cuts a loop short)
   */
  spinLimit?: number;
}

/**
 * The arguments both probes take, checked (errors named by `what`): nWG ≥ 1, rounds ≥ minRounds,
 * the spin limit below 65535 (default 60000, returned).
 */
function gridArgs(what: string, o: { nWG: number; rounds: number; spinLimit?: number }, minRounds: number): number {
  if (!(Number.isInteger(o.nWG) && o.nWG >= 1)) throw new Error(`${what}: ${o.nWG} workgroups: need a positive integer`);
  if (!(Number.isInteger(o.rounds) && o.rounds >= minRounds)) throw new Error(`${what}: ${o.rounds} rounds: need an integer ≥ ${minRounds}`);
  const spinLimit = o.spinLimit ?? 60000;
  if (!(Number.isInteger(spinLimit) && spinLimit >= 1 && spinLimit < 65535)) throw new Error(`${what}: spin limit ${spinLimit}: need 1 … 65534`);
  return spinLimit;
}

/** One grid_sync dispatch of nWG workgroups and `rounds` device-wide barriers. */
export function gridSync(o: GridSyncOptions): GridSyncResult {
  const { dev } = o;
  const spinLimit = gridArgs('grid-sync', o, 0);
  const ctl = dev.createBuffer(16, true), data = dev.createBuffer(8 * o.nWG, true);
  try {
    dev.write(ctl, 0, new Uint8Array(16));
    dev.write(data, 0, new Uint8Array(8 * o.nWG));
    const ops = new OpList(o.pipes);
    dispatch(ops, KERNELS.grid_sync, { CTL: ctl, DATA: data }, { nWG: o.nWG, rounds: o.rounds, spinLimit }, [o.nWG]);
    const cmd = dev.record(ops.build(), true);
    dev.runSync(cmd);
    const seconds = dev.timings(cmd)[0] / 1e9;
    dev.freeCommand(cmd);
    const c = new Uint32Array(dev.read(ctl, 0, 16));
    const coResident = c[1] === 0;
    const half = new Uint32Array(dev.read(data, (o.rounds % 2) * 4 * o.nWG, 4 * o.nWG));
    return { coResident, consistent: coResident && half.every((v) => v === o.rounds), seconds };
  } finally {
    dev.freeBuffer(ctl);
    dev.freeBuffer(data);
  }
}

export interface GridChainOptions {
  dev: VkDevice;
  pipes: Pipelines;
  /** workgroups: of the persistent dispatch, or of each dispatch of the chain */
  nWG: number;
  rounds: number;
  /** one dispatch with device-wide barriers (true), or a dispatch a round with pipeline barriers */
  persist: boolean;
  /** the vector's length (even, ≤ 4096) */
  n: number;
  /** the weights: nMat n×n f16 matrices in one buffer of `bytes` (n·n·2 each), round r uses r % nMat */
  w: { buf: number; bytes: number };
  nMat: number;
  /** the starting vector (n values) */
  x0: Float32Array;
  spinLimit?: number;
}

export interface GridChainResult {
  /** every workgroup of the persistent dispatch was resident at once (a dispatch a round: true) */
  coResident: boolean;
  /** the vector after `rounds` products (meaningful where coResident) */
  x: Float32Array;
}

/** Largest vector grid_chain.comp stages in shared memory. */
export const GRID_CHAIN_MAX_N = 4096;

/**
 * Records the chain of `rounds` products x ← tanh(W_r·x) (grid_chain.comp): one persistent
 * dispatch, or one dispatch a round. `run()` puts the inputs back (x0, the counters zeroed: the
 * barriers count up from zero) and runs it, returning the wall milliseconds of the submission
 * alone; `result()` reads what the last run left; `dispose()` frees the command and buffers.
 */
export function gridChain(o: GridChainOptions): { run(): number; result(): GridChainResult; dispose(): void } {
  const { dev } = o;
  const spinLimit = gridArgs('grid-chain', o, 1);
  if (!(Number.isInteger(o.n) && o.n >= 2 && o.n % 2 === 0 && o.n <= GRID_CHAIN_MAX_N)) throw new Error(`grid-chain: n ${o.n}: need an even number 2 … ${GRID_CHAIN_MAX_N}`);
  if (!(Number.isInteger(o.nMat) && o.nMat >= 1)) throw new Error(`grid-chain: ${o.nMat} matrices: need a positive integer`);
  if (o.w.bytes < o.nMat * o.n * o.n * 2) throw new Error(`grid-chain: a weight buffer of ${o.w.bytes} bytes for ${o.nMat} f16 matrices of ${o.n}×${o.n}`);
  if (o.x0.length !== o.n) throw new Error(`grid-chain: starting vector of ${o.x0.length} values for n ${o.n}`);
  const ctl = dev.createBuffer(16, true), x = dev.createBuffer(8 * o.n, true);
  const ops = new OpList(o.pipes);
  const push = { nWG: o.nWG, rounds: o.rounds, spinLimit, persist: o.persist ? 1 : 0, n: o.n, nMat: o.nMat, r0: 0 };
  const bind = { CTL: ctl, W: o.w.buf, X: x };
  if (o.persist) dispatch(ops, KERNELS.grid_chain, bind, push, [o.nWG]);
  else for (let r = 0; r < o.rounds; r++) dispatch(ops, KERNELS.grid_chain, bind, { ...push, r0: r }, [o.nWG]);
  const cmd = dev.record(ops.build(), false);
  return {
    run() {
      dev.write(ctl, 0, new Uint8Array(16));
      dev.write(x, 0, new Uint8Array(o.x0.buffer, o.x0.byteOffset, o.x0.byteLength));
      const t0 = performance.now();
      dev.runSync(cmd);
      return performance.now() - t0;
    },
    result() {
      const c = new Uint32Array(dev.read(ctl, 0, 16));
      return { coResident: c[1] === 0, x: new Float32Array(dev.read(x, (o.rounds % 2) * 4 * o.n, 4 * o.n)) };
    },
    dispose() {
      dev.freeCommand(cmd);
      dev.freeBuffer(ctl);
      dev.freeBuffer(x);
    },
  };
}
