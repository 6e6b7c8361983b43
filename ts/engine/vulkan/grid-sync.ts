/**
 * The persistent-kernel probe (shaders/grid_sync.comp, #17): can `nWG` workgroups of 256 threads
 * run at once on this device, and what does a device-wide barrier through atomics cost there?
 * Vulkan does not say how many workgroups are resident together, so a persistent decode kernel
 * must find out on the device and fall back to the multi-dispatch step where they are not; this
 * is that check, alone, plus the timing a design needs (scripts/bench-grid-sync.ts).
 */
import type { VkDevice } from '../../vk/addon.js';
import { OpList, type Pipelines } from './graph.js';
import { KERNELS, dispatch } from './kernels.js';

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

/** One grid_sync dispatch of nWG workgroups and `rounds` device-wide barriers. */
export function gridSync(o: GridSyncOptions): GridSyncResult {
  const { dev } = o;
  if (!(Number.isInteger(o.nWG) && o.nWG >= 1)) throw new Error(`grid-sync: ${o.nWG} workgroups: need a positive integer`);
  if (!(Number.isInteger(o.rounds) && o.rounds >= 0)) throw new Error(`grid-sync: ${o.rounds} rounds: need an integer ≥ 0`);
  const spinLimit = o.spinLimit ?? 60000;
  if (!(Number.isInteger(spinLimit) && spinLimit >= 1 && spinLimit < 65535)) throw new Error(`grid-sync: spin limit ${spinLimit}: need 1 … 65534`);
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
