/**
 * The device's subgroups as they run, against what the device reports (shaders/subgroup_probe.comp
 * says why it matters). Run once when the engine opens a device; q36 --doctor prints it.
 */
import type { VkDevice } from '../../vk/addon.js';
import { OpList, Pipelines } from './graph.js';
import { KERNELS, dispatch } from './kernels.js';

const N = 256;

export interface SubgroupRun {
  /** gl_SubgroupSize as the shader sees it */
  reported: number;
  /** invocations one subgroup operation really combined */
  lanes: number;
  /** the first mismatch with a consistent layout (lanes = size, consecutive invocations), or undefined */
  problem?: string;
}

/** Checks the probe's words (4 per invocation) against the layout the kernels assume. */
export function checkSubgroupWords(w: Uint32Array, deviceSize: number): SubgroupRun {
  const reported = w[1] >>> 16, lanes = w[0];
  const bad = (problem: string): SubgroupRun => ({ reported, lanes, problem });
  if (reported !== deviceSize) return bad(`shaders see subgroup size ${reported}, the device reports ${deviceSize}`);
  if (lanes !== reported) return bad(`the device reports ${reported}-lane subgroups but runs ${lanes} invocations per subgroup operation`);
  for (let i = 0; i < N; i++) {
    const [add, lane, id, xor] = [w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]];
    if (add !== reported) return bad(`invocation ${i}: a subgroup sum over ${add} lanes, not ${reported}`);
    if ((lane & 0xffff) !== i % reported || lane >>> 16 !== reported) return bad(`invocation ${i} is lane ${lane & 0xffff} of a ${lane >>> 16}-lane subgroup (consecutive invocations expected)`);
    if ((id & 0xffff) !== Math.floor(i / reported) || id >>> 16 !== N / reported) return bad(`invocation ${i} is in subgroup ${id & 0xffff} of ${id >>> 16}`);
    if (xor !== (i ^ 1)) return bad(`invocation ${i}: a shuffle-xor by 1 read invocation ${xor}`);
  }
  return { reported, lanes };
}

/** Runs the probe on the device (one workgroup) and checks it. */
export function probeSubgroups(dev: VkDevice, pipes: Pipelines): SubgroupRun {
  const size = dev.info().subgroupSize;
  if (!(size >= 1 && size <= N && N % size === 0)) return { reported: size, lanes: 0, problem: `subgroup size ${size} does not divide ${N}` };
  const O = dev.createBuffer(N * 16, true);
  let cmd = -1;
  try {
    const ops = new OpList(pipes);
    dispatch(ops, KERNELS.subgroup_probe, { O }, {}, [1]);
    cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    return checkSubgroupWords(new Uint32Array(dev.read(O, 0, N * 16)), size);
  } finally {
    if (cmd >= 0) dev.freeCommand(cmd);
    dev.freeBuffer(O);
  }
}
