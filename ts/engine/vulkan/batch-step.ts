/**
 * Batched decode steps (q36-server --batched-session): one token for each of 2..batchRows
 * sessions in one model step. step.ts records it with `rows`: the weights are multiplied over all
 * rows at once (read once per step), while each row's conv, recurrence, q/k prep, KV store and
 * attention run as that session's own one-token step on views of its scratch rows and its own
 * state buffers. A step is recorded once per list of sessions and replayed (positions live in
 * PARAMS rows); the last few lists are kept.
 */
import { stateSizes } from '../payload.js';
import { OpList, attnBlock } from './graph.js';
import type { VkHost } from './host.js';
import type { VkSessionState } from './session-state.js';
import { recordStep, type RowViews } from './step.js';

/** Recorded batched steps kept (lists of sessions): a server's slots make few distinct lists. */
const KEEP_RECORDED = 16;

/** Floats of each row's part of the scratch buffers a batched step's per-row kernels use. */
function rowFloats(h: VkHost): Record<keyof RowViews, number> & { PARAMS: number } {
  const s = h.shape, st = stateSizes(s), slots = s.nHead * Math.ceil(h.options.ctx / attnBlock(s, 1));
  return {
    U: st.convCh, Z: s.ssmInner, B: s.ssmVHeads, AL: s.ssmVHeads, Ossm: s.ssmInner, Oattn: s.nHead * s.headDim,
    QG: 2 * s.nHead * s.headDim, Kb: st.kvDim, Vb: st.kvDim, P: slots * s.headDim, ML: slots * 2, PARAMS: h.paramWords,
  };
}

/**
 * Why this device cannot run batched steps, or undefined: a row's views must start at multiples
 * of the device's storage-buffer offset alignment (tiny models have 16-byte rows).
 */
export function batchProblem(h: VkHost, align: number): string | undefined {
  const bad = Object.entries(rowFloats(h)).filter(([, f]) => (f * 4) % align !== 0).map(([n, f]) => `${n} (${f * 4} B)`);
  return bad.length ? `rows of ${bad.join(', ')} are not multiples of the device's ${align}-byte binding alignment` : undefined;
}

const VIEWED = { U: 'U', Z: 'Z', B: 'B', AL: 'AL', Ossm: 'O', Oattn: 'O', QG: 'QG', Kb: 'Kb', Vb: 'Vb', P: 'P', ML: 'ML' } as const;

export class BatchSteps {
  /** row i's views (created on first use) */
  private views: (RowViews & { params: number })[] = [];
  /** recorded steps by session list, oldest use first */
  private cmds = new Map<string, { cmd: number; names: string[]; ids: number[] }>();

  constructor(private readonly h: VkHost) {}

  private rowViews(i: number): RowViews & { params: number } {
    while (this.views.length <= i) {
      const b = this.views.length, f = rowFloats(this.h), dev = this.h.dev, buf = this.h.buf;
      const view = (name: string, floats: number) => dev.createView(buf[name], b * floats * 4, floats * 4);
      const v = Object.fromEntries(Object.entries(VIEWED).map(([k, name]) => [k, view(name, f[k as keyof RowViews])])) as unknown as RowViews;
      this.views.push({ ...v, params: view('PARAMS', f.PARAMS) });
    }
    return this.views[i];
  }

  private command(states: VkSessionState[]): { cmd: number; names: string[] } {
    const key = states.map((s) => s.id).join(',');
    let rec = this.cmds.get(key);
    if (rec) {
      this.cmds.delete(key);
    } else {
      const h = this.h, ops = new OpList(h.pipes);
      const rows = states.map((s, i) => { const v = this.rowViews(i); return { layers: s.layers, params: v.params, v }; });
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
    h.claimOutputsFor(states);
    h.dev.write(B.XIN, 0, new Uint8Array(x.buffer));
    h.dev.write(B.PIN, 0, new Uint8Array(pin.buffer));
    await h.runStep({ cmds: [cmd], layers: [-1], names: [names] }, n);
    states.forEach((s, i) => s.batchedOutput(i));
  }
}
