/**
 * The matvec recorder: every product of a step as dispatches, from the weights on the device
 * (weights.ts) to graph.ts's kernel choice (matvecOp: the form and workgroup shape by type, rows
 * and the tuning knobs). One weight runs as a dispatch per window of it; a decode step's stacked
 * projections as one product into STK; the router with its routing epilogue (matvec_router). The
 * step (step.ts) records through it; it owns no device state beyond what it is given.
 */
import { GgmlType } from '../../gguf/index.js';
import type { ModelShape } from '../../model/shape.js';
import { MV, matvecOp, mvqTakes, type MatvecDispatch, type OpList } from './graph.js';
import type { EngineBuffers } from './scratch.js';
import { MATVEC, type DevTensor, type VkWeights } from './weights.js';

export interface MatvecOpts {
  flags?: number; xStride?: number; yStride?: number; xOffset?: number; barrier?: boolean; epilogue?: MatvecDispatch['epilogue']; moe?: MatvecDispatch['moe'];
  /** the activation rows also as int8 levels (rmsnorm's quant, quant.comp): mvq.comp where the type has it */
  levels?: MatvecDispatch['levels'];
  /**
   * f32 arithmetic even where the matrix units would take the product (mmc rounds its operands to
   * f16): the router, whose logits pick experts, so a rounding would flip near ties and send a
   * prefill token to other experts than the same token decoded
   */
  exact?: boolean;
}

export interface MatvecRecorderOptions {
  w: VkWeights;
  buf: Readonly<EngineBuffers>;
  shape: ModelShape;
  /** a CPU device (lavapipe): workgroups run on a few cores, so rows are not split finer */
  cpuDevice: boolean;
  /** rows a workgroup pinned (vkMatvecRows, measurements) */
  fixedRows?: 1 | 2 | 4;
  /** the weight types whose one-row products run on mv.comp (vkMvTypes, measurements) */
  mvTypes?: Set<string>;
  /** int8 activation levels in use (mvq) */
  mvq: boolean;
  /** the tiled prefill matmuls on the matrix units */
  coopmat: boolean;
  /** elsewhere on the packed-f16 tiles (mmh) */
  f16: boolean;
}

export class MatvecRecorder {
  constructor(private readonly o: MatvecRecorderOptions) {}

  /** One weight's product (every window of it). */
  matvec(ops: OpList, name: string, x: number, y: number, nRows: number, o: MatvecOpts = {}): void {
    this.matvecOf(ops, this.o.w.t.get(name)!, name.replace(/^blk\.\d+\./, '').replace(/\.weight$/, ''), x, y, nRows, o);
  }

  /** whether mvq.comp takes this weight's one-row products (mvq on and graph.ts mvqTakes) */
  levelsFor(name: string): boolean {
    const w = this.o.w.t.get(name);
    return this.o.mvq && !!w && mvqTakes(MATVEC[w.type], w.ne0);
  }

  /** Decode (one token): the stacked projections of `blk.L.key` as one matvec into STK; the part views, or undefined without a stack. */
  stacked(ops: OpList, l: number, key: string, x: number, barrier = true, levels?: MatvecOpts['levels']): number[] | undefined {
    const st = this.o.w.stacks.get(`blk.${l}.${key}`);
    if (!st) return undefined;
    const route = key === 'router_in' && this.routesInMatvec(l);
    this.matvecOf(ops, st.w, route ? 'router_in+route' : key, x, this.o.buf.STK, 1, { barrier, epilogue: route ? this.routerEpilogue() : undefined, levels });
    return st.views;
  }

  private routerEpilogue(): MatvecOpts['epilogue'] {
    return { shader: 'matvec_router', extra: [this.o.buf.IDS, this.o.buf.WTS, this.o.buf.CNT], aux: this.o.shape.nExpert };
  }

  /**
   * A batched decode step's rows: layer l's router logits of all rows into R, each row routed by
   * the last workgroup of its row (matvec_router), summed and routed exactly as the row alone is
   * (a row's matvec sums do not depend on the rows stacked with it; the routing is router.glsl's
   * either way). False, recording nothing, without an F32 router weight in one binding.
   */
  routeRows(ops: OpList, l: number, x: number, nRows: number, barrier = true): boolean {
    const w = this.o.w.t.get(`blk.${l}.ffn_gate_inp.weight`);
    if (!w || !this.routerEpilogueTakes(w) || w.rows !== this.o.shape.nExpert) return false;
    this.matvecOf(ops, w, 'router+route', x, this.o.buf.R, nRows, { barrier, epilogue: this.routerEpilogue() });
    return true;
  }

  /**
   * Whether decode routes layer l's token in the last workgroup of its router matvec
   * (matvec_router.comp): when the router stack exists and starts with the router's F32 rows in
   * one binding (always, unless a test caps bindings very low).
   */
  routesInMatvec(l: number): boolean {
    const st = this.o.w.stacks.get(`blk.${l}.router_in`);
    return !!st && this.routerEpilogueTakes(st.w) && st.parts[0] === this.o.shape.nExpert;
  }

  /** matvec_router's weight: F32 rows in one binding (its epilogue counts one dispatch's workgroups) */
  private routerEpilogueTakes(w: DevTensor): boolean {
    return w.type === GgmlType.F32 && w.windows.length === 1;
  }

  /** One matvec dispatch per window of the weight (one for most weights), all into the same Y. */
  private matvecOf(ops: OpList, w: DevTensor, label: string, x: number, y: number, nRows: number, o: MatvecOpts): void {
    const expert = w.expertBytes > 0;
    w.windows.forEach((win, i) => {
      matvecOp(ops, {
        // grouped experts read their pairs from LIST (matvecOp falls back to IDS where it must)
        type: MATVEC[w.type], buffers: [win.buf, x, y, o.moe ? this.o.buf.LIST : this.o.buf.IDS, this.o.buf.GRID], rows: expert ? w.rows : win.count, weightRows: w.rows, n: w.ne0, rowBytes: w.rowBytes, nRows,
        xStride: o.xStride, yStride: o.yStride ?? w.rows, xOffset: o.xOffset, yOffset: expert ? 0 : win.first, flags: (o.flags ?? 0) | (w.glu ? MV.glu : 0), K: this.o.shape.nExpertUsed,
        expertBytes: w.expertBytes, e0: expert ? win.first : 0, ne: expert ? win.count : undefined, upBytes: win.upBytes, wOffset: win.wOffset,
        // the windows write disjoint outputs: only the last one needs the barrier
        barrier: i === w.windows.length - 1 ? o.barrier : false, label, epilogue: o.epilogue, moe: o.moe,
        // a CPU device (lavapipe) runs workgroups on a few cores: splitting rows finer only adds
        // overhead (tinyA decode on lavapipe: 197 ms per token with the GPU rule, 148 with 4 rows)
        minGroups: this.o.cpuDevice ? 0 : undefined, fixedRows: this.o.fixedRows,
        // mv.comp or matvec.comp for one activation row: by type, the same for every session and
        // batched step (a batched row keeps the bits of the row alone)
        unit: this.o.mvTypes ? this.o.mvTypes.has(MATVEC[w.type]) : undefined,
        levels: o.levels, coopmat: this.o.coopmat && !o.exact, f16: this.o.f16 && !o.exact,
      });
    });
  }
}
