/**
 * Batched decode steps (q36-server --batched-session): one token for each of 2..batchRows
 * sessions in one model step. step.ts records it with `rows`: the weights are multiplied over all
 * rows at once (read once per step), while each row's conv, recurrence, q/k prep, KV store and
 * attention run as that session's own one-token step on its state buffers, all rows in one
 * dispatch of each (kernels.ts ROW_KERNELS, shaders/rows.glsl). A step is recorded once per list
 * of sessions and replayed (positions live in PARAMS rows); the last few lists are kept.
 */
import { OpList } from './graph.js';
import type { VkHost } from './host.js';
import { ROW_KERNELS, descriptorCount } from './kernels.js';
import type { VkSessionState } from './session-state.js';
import { recordStep } from './step.js';

/** Recorded batched steps kept (lists of sessions): a server's slots make few distinct lists. */
const KEEP_RECORDED = 16;

/**
 * Why this device cannot run batched steps, or undefined: the _rows kernels index arrays of
 * buffers by row (rows.glsl), up to descriptorCount() buffers a pipeline.
 */
export function batchProblem(dev: { bufferArrays: boolean; maxStageStorageBuffers: number }): string | undefined {
  if (!dev.bufferArrays) return 'the device cannot index arrays of storage buffers (shaderStorageBufferArrayDynamicIndexing)';
  const most = Math.max(...Object.values(ROW_KERNELS).map(descriptorCount));
  return dev.maxStageStorageBuffers < most ? `the device binds at most ${dev.maxStageStorageBuffers} storage buffers a pipeline, the batched step's kernels ${most}` : undefined;
}

export class BatchSteps {
  /** recorded steps by session list, oldest use first */
  private cmds = new Map<string, { cmd: number; names: string[]; ids: number[] }>();

  constructor(private readonly h: VkHost) {}

  private command(states: VkSessionState[]): { cmd: number; names: string[] } {
    const key = states.map((s) => s.id).join(',');
    let rec = this.cmds.get(key);
    if (rec) {
      this.cmds.delete(key);
    } else {
      const h = this.h, ops = new OpList(h.pipes);
      const rows = states.map((s, i) => ({ layers: s.layers, params: h.paramRow(i) }));
      recordStep({ h, ops, T: states.length, rows, layers: [], kvTypes: h.kv, ctx: h.options.ctx, paramWords: h.paramWords }, 0);
      rec = { cmd: h.dev.record(ops.build(), h.options.vkProfile === true), names: ops.names, ids: states.map((s) => s.id) };
      while (this.cmds.size >= KEEP_RECORDED) this.drop(this.cmds.keys().next().value!);
    }
    this.cmds.set(key, rec);
    return rec;
  }

  private drop(key: string): void {
    const rec = this.cmds.get(key);
    if (!rec) return;
    this.h.dev.freeCommand(rec.cmd);
    this.cmds.delete(key);
  }

  /** A session is gone: the steps recorded with its buffers go too. */
  forget(id: number): void {
    for (const [key, rec] of [...this.cmds]) if (rec.ids.includes(id)) this.drop(key);
  }

  /**
   * One step: row i is states[i] taking tokens[i] at positions[i]. Afterwards each state's
   * logits and arg-max are left in LOGITS/ARG row i (read on demand, as a decode step's).
   */
  async run(states: VkSessionState[], tokens: number[], positions: number[]): Promise<void> {
    const h = this.h, B = h.buf, n = states.length;
    const { cmd, names } = this.command(states);
    const pin = new Uint32Array(n * h.paramWords);
    positions.forEach((p, i) => { pin[i * h.paramWords] = p; pin[i * h.paramWords + 1] = 1; });
    const x = h.embed(tokens);
    // the other sessions' deferred rows are saved before this step overwrites LOGITS/ARG
    h.out.claimFor(states);
    h.dev.write(B.XIN, 0, new Uint8Array(x.buffer));
    h.dev.write(B.PIN, 0, new Uint8Array(pin.buffer));
    await h.runStep({ cmds: [cmd], layers: [-1], names: [names] }, n);
    states.forEach((s, i) => s.batchedOutput(i));
  }
}
