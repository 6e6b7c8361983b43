/**
 * Model weights on a Vulkan device. Two ways in:
 * - import (zero-copy, VK_EXT_external_memory_host): page-aligned ranges of the GGUF file become
 *   buffers whose memory is the file mapping itself, and weights are views of them. The default on
 *   unified-memory devices (the BC-250): the GPU reads the page cache, nothing is copied, and the
 *   model costs its file size once instead of twice.
 * - upload: copied through the addon's staging buffer into device-local memory (discrete GPUs,
 *   where host memory sits across PCIe).
 * Either way, a weight larger than one binding (maxStorageBufferRange: 128 MiB on lavapipe) is
 * bound in windows of whole rows, or of whole experts for routed-expert tensors, and its matvec
 * runs once per window (matvec.glsl's yOffset and e0/ne). Float weights (norms, router, conv) are
 * converted to F32 and uploaded in both modes, and so are stacks (several projections of one input
 * in one buffer): they are small, and their layout is not the file's.
 */
import { ALL_TYPES, GgmlType, readTensorBytes, rowBytes, typeName, type GgufFile, type TensorInfo } from '../../gguf/index.js';
import type { QuantKernels } from '../../core/quant.js';
import { requiredTensors, type ModelShape } from '../../model/shape.js';
import { stackMembers, type StackKey } from '../../model/schema.js';
import type { VkDevice } from '../../vk/addon.js';

/** The matvec shader variant of each weight type the Vulkan backend decodes (shaders/decode.glsl): all the CPU's. */
export const MATVEC: Record<number, string> = Object.fromEntries(ALL_TYPES.filter((t) => t.supported).map((t) => [t.id, t.name.toLowerCase()]));

/**
 * One binding of a weight: units [first, first + count) — rows, or experts for routed-expert
 * weights — starting wOffset bytes into buf. upBytes (GLU): bytes from a gate row to its up row.
 */
export interface Window { buf: number; first: number; count: number; wOffset: number; upBytes?: number }

/** A weight on the device. */
export interface DevTensor {
  type: number; rowBytes: number; ne0: number;
  /** output rows (per expert for routed experts; gate rows for a GLU pair) */
  rows: number;
  /** routed experts: bytes from one expert to the next inside a window (0: not an expert weight) */
  expertBytes: number;
  /** gate and up fused: the matvec writes silu(gate·x)·(up·x) */
  glu: boolean;
  windows: Window[];
}

/**
 * A stack: several weights over the same input in one buffer, one matvec for all in decode; parts:
 * each weight's rows, views: where each part's output lies in STK (made by the engine).
 */
export interface Stack { w: DevTensor; parts: number[]; views: number[] }

/**
 * Projections of one input that decode runs as a single matvec over stacked rows (each dispatch
 * costs several µs on its own, whatever its size); prefill still runs them one by one (over their
 * row ranges of the stack), since its per-token output layout must stay per weight.
 */
const STACKS: { key: StackKey; parts: string[]; layers: 'recurrent' | 'attention' | 'all' }[] = [
  { key: 'ssm_in', parts: stackMembers('ssm_in'), layers: 'recurrent' },
  { key: 'attn_in', parts: stackMembers('attn_in'), layers: 'attention' },
  { key: 'router_in', parts: stackMembers('router_in'), layers: 'all' },
];

/** Imported file regions start every REGION bytes; a weight (or gate+up pair) never straddles two. */
const REGION = 1 << 30;
/** Staging piece for uploads (the addon's staging buffer is 64 MiB). */
const PIECE = 64 << 20;

export type WeightMode = 'import' | 'upload';

/**
 * An MTP head's input projection (nextn.eh_proj: [normed embedding | normed hidden state] → the
 * residual stream), held beside the one-layer model's weights under INPUT_PROJ.
 */
export interface InputProjection { weight: TensorInfo }
export const INPUT_PROJ = 'input_proj.weight';

export interface WeightLoadOptions {
  dev: VkDevice;
  file: GgufFile;
  /** the model file, open for reading */
  fd: number;
  shape: ModelShape;
  q: QuantKernels;
  mode: WeightMode;
  /** the largest binding in bytes (maxStorageBufferRange, or less to exercise windows in tests) */
  maxBinding: number;
  /** tensors not to load (SSD streaming: the streamed layers' routed experts, expert-stream.ts) */
  skip?: (name: string) => boolean;
  /** an MTP head's input projection, loaded as INPUT_PROJ */
  head?: InputProjection;
}

export class VkWeights {
  readonly t = new Map<string, DevTensor>();
  /** stacked projections by `blk.L.key` (see STACKS) */
  readonly stacks = new Map<string, Stack>();
  /** bytes copied into device memory, and bytes of the file bound in place (import) */
  copiedBytes = 0;
  importedBytes = 0;
  private readonly info: ReturnType<VkDevice['info']>;
  /** import regions by start offset */
  private regions = new Map<number, { buf: number; start: number; bytes: number }>();
  /** import: [start, end) of each weight or gate+up pair that must lie inside one region */
  private spans: [number, number][] = [];
  /** every buffer and view made, in order (free() releases them in reverse: views first) */
  private made: number[] = [];

  constructor(private readonly o: WeightLoadOptions) {
    this.info = o.dev.info();
  }

  /** Loads every weight the forward pass reads except token_embd (embedded on the host). */
  load(): void {
    const { shape, file } = this.o;
    const required = deviceTensors(shape).filter((r) => !this.o.skip?.(r.name));
    const floats = new Set(required.filter((r) => r.types === 'float').map((r) => r.name));
    const matrices = required.map((r) => r.name).filter((n) => !floats.has(n));
    const head = this.o.head?.weight;
    for (const t of [...matrices.map((n) => file.tensorByName.get(n)!), ...(head ? [head] : [])]) {
      if (!MATVEC[t.type]) throw new Error(`${t.name}: type ${typeName(t.type)} is not supported by the Vulkan backend yet (use --cpu)`);
    }
    if (this.o.mode === 'import') this.planRegions(matrices, head ? [head] : []);
    if (head) this.t.set(INPUT_PROJ, this.loadMatrix(head, false));
    const done = new Set<string>();
    for (let l = 0; l < shape.nLayer; l++) {
      for (const kind of ['exps', 'shexp']) {
        const g = `blk.${l}.ffn_gate_${kind}.weight`, u = `blk.${l}.ffn_up_${kind}.weight`;
        if (this.o.skip?.(g)) continue;
        if (this.loadGlu(`blk.${l}.ffn_gate_up_${kind}.weight`, g, u, kind === 'exps')) done.add(g).add(u);
      }
      for (const st of STACKS) {
        if (st.layers !== 'all' && (st.layers === 'recurrent') !== shape.recurrent[l]) continue;
        const names = st.parts.map((p) => `blk.${l}.${p}`);
        if (this.loadStack(`blk.${l}.${st.key}`, names, floats)) names.forEach((n) => done.add(n));
      }
    }
    for (const r of required) {
      if (done.has(r.name)) continue;
      const t = file.tensorByName.get(r.name)!;
      this.t.set(r.name, floats.has(r.name) ? this.loadFloat(t) : this.loadMatrix(t, /_exps\.weight$/.test(r.name)));
    }
  }

  /** Frees every buffer and view load() made (a failed load, or the engine's fallback to upload). */
  free(): void {
    for (const id of this.made.reverse()) this.o.dev.freeBuffer(id);
    this.made = [];
    this.t.clear();
    this.stacks.clear();
    this.regions.clear();
  }

  private create(bytes: number): number {
    const id = this.o.dev.createBuffer(bytes, false);
    this.made.push(id);
    return id;
  }

  /** The single buffer of an unwindowed weight (floats: norms, conv, router, …). */
  buf(name: string): number {
    const w = this.t.get(name);
    if (!w || w.windows.length !== 1) throw new Error(`${name}: not a single-buffer weight`);
    return w.windows[0].buf;
  }

  /** A float-class tensor as F32 in one buffer (the shaders read norms, routers, conv as F32). */
  private loadFloat(t: TensorInfo): DevTensor {
    const bytes = this.f32Bytes(t);
    if (bytes.byteLength > this.o.maxBinding) throw new Error(`${t.name} (${bytes.byteLength} bytes as F32) exceeds the largest binding (${this.o.maxBinding})`);
    const buf = this.create(bytes.byteLength);
    this.o.dev.write(buf, 0, bytes);
    this.copiedBytes += bytes.byteLength;
    return { type: GgmlType.F32, rowBytes: t.rowElems * 4, ne0: t.rowElems, rows: t.rows, expertBytes: 0, glu: false, windows: [{ buf, first: 0, count: t.rows, wOffset: 0 }] };
  }

  private f32Bytes(t: TensorInfo): Uint8Array {
    if (t.type === GgmlType.F32) return readBytes(this.o.fd, t, 0, t.nbytes);
    return new Uint8Array(this.o.q.dequantize(t.type, readBytes(this.o.fd, t, 0, t.nbytes), t.rows * t.rowElems).buffer);
  }

  /** A quantized (or float) matrix as the file stores it, in windows of rows or experts. */
  private loadMatrix(t: TensorInfo, expert: boolean): DevTensor {
    const nE = expert ? this.o.shape.nExpert : 1;
    const unit = expert ? t.nbytes / nE : t.rowBytes;
    const units = expert ? nE : t.rows;
    const base: Omit<DevTensor, 'windows'> = { type: t.type, rowBytes: t.rowBytes, ne0: t.rowElems, rows: t.rows / nE, expertBytes: expert ? unit : 0, glu: false };
    const windows = this.plan(t.name, units, unit, 0).map(([first, count]) => {
      if (this.o.mode === 'import') return this.view(t.offset + first * unit, count * unit, first, count);
      const buf = this.create(count * unit);
      for (let o = 0; o < count * unit; o += PIECE) this.o.dev.write(buf, o, readBytes(this.o.fd, t, first * unit + o, Math.min(PIECE, count * unit - o)));
      this.copiedBytes += count * unit;
      return { buf, first, count, wOffset: 0 };
    });
    return { ...base, windows };
  }

  /**
   * Gate and up projections (routed experts, or the shared expert) as one fused GLU weight: on
   * upload, each window holds [gate; up] per expert (experts) or [gate rows; up rows] (shared);
   * on import, views that span both tensors in the file, up rows upBytes after (or before) their
   * gate rows. Returns false (loaded separately then) when the two differ in type or shape, or
   * one unit of the pair cannot fit a binding.
   */
  private loadGlu(key: string, gn: string, un: string, expert: boolean): boolean {
    const g = this.o.file.tensorByName.get(gn), u = this.o.file.tensorByName.get(un);
    if (!g || !u || g.type !== u.type || g.rowElems !== u.rowElems || g.rows !== u.rows || !MATVEC[g.type]) return false;
    const nE = expert ? this.o.shape.nExpert : 1;
    const part = expert ? g.nbytes / nE : g.rowBytes; // one unit (expert, or row) of gate or of up
    const units = expert ? nE : g.rows;
    const base = { type: g.type, rowBytes: g.rowBytes, ne0: g.rowElems, rows: g.rows / nE, glu: true };
    if (this.o.mode === 'import') {
      const delta = u.offset - g.offset;
      const slack = Math.abs(delta) + this.align();
      if (slack + part > this.o.maxBinding) return false;
      const windows = this.plan(key, units, part, Math.abs(delta)).map(([first, count]) => {
        const gs = g.offset + first * part, us = u.offset + first * part;
        const lo = Math.min(gs, us), hi = Math.max(gs, us) + count * part;
        const w = this.view(lo, hi - lo, first, count);
        return { ...w, wOffset: w.wOffset + (gs - lo), upBytes: delta };
      });
      this.t.set(key, { ...base, expertBytes: expert ? part : 0, windows });
      return true;
    }
    if (2 * part > this.o.maxBinding) return false;
    const windows = this.plan(key, units, 2 * part, 0).map(([first, count]) => {
      const buf = this.create(2 * count * part);
      // stage ≤ PIECE at a time: whole experts [gate_e; up_e], or the window's gate rows then up rows
      const per = expert ? Math.max(1, Math.floor(PIECE / (2 * part))) : count;
      for (let i0 = 0; i0 < count; i0 += per) {
        const n = Math.min(per, count - i0);
        const stage = new Uint8Array(2 * part * n);
        if (expert) {
          for (let i = 0; i < n; i++) {
            readTensorBytes(this.o.fd, g, stage.subarray(2 * part * i, 2 * part * i + part), (first + i0 + i) * part, part);
            readTensorBytes(this.o.fd, u, stage.subarray(2 * part * i + part, 2 * part * (i + 1)), (first + i0 + i) * part, part);
          }
        } else {
          readTensorBytes(this.o.fd, g, stage.subarray(0, n * part), first * part, n * part);
          readTensorBytes(this.o.fd, u, stage.subarray(n * part), first * part, n * part);
        }
        this.o.dev.write(buf, 2 * part * i0, stage);
      }
      this.copiedBytes += 2 * count * part;
      return { buf, first, count, wOffset: 0, upBytes: expert ? part : count * part };
    });
    this.t.set(key, { ...base, expertBytes: expert ? 2 * part : 0, windows });
    return true;
  }

  /**
   * Uploads weights of the same type and row length as one buffer of stacked rows (float weights
   * as F32). Returns false (loaded separately then) when they differ, the stack exceeds the
   * largest binding, or a part's output would start off the view alignment.
   */
  private loadStack(key: string, names: string[], floats: Set<string>): boolean {
    const ts = names.map((n) => this.o.file.tensorByName.get(n));
    if (ts.some((t) => !t)) return false;
    const asF32 = names.map((n) => floats.has(n));
    const types = ts.map((t, i) => (asF32[i] ? GgmlType.F32 : t!.type));
    if (types.some((t) => t !== types[0] || !MATVEC[t]) || ts.some((t) => t!.rowElems !== ts[0]!.rowElems)) return false;
    const rb = rowBytes(types[0], ts[0]!.rowElems);
    const rows = ts.map((t) => t!.rows);
    const total = rows.reduce((a, b) => a + b, 0);
    let start = 0;
    for (const r of rows) {
      if ((start * 4) % this.info.minStorageBufferOffsetAlignment !== 0) return false;
      start += r;
    }
    if (total * rb > this.o.maxBinding) return false;
    const buf = this.create(total * rb);
    let row = 0;
    ts.forEach((t, i) => {
      const data = asF32[i] ? this.f32Bytes(t!) : readBytes(this.o.fd, t!, 0, t!.nbytes);
      this.o.dev.write(buf, row * rb, data);
      this.t.set(names[i], { type: types[0], rowBytes: rb, ne0: t!.rowElems, rows: t!.rows, expertBytes: 0, glu: false, windows: [{ buf, first: 0, count: t!.rows, wOffset: row * rb }] });
      row += t!.rows;
    });
    this.copiedBytes += total * rb;
    this.stacks.set(key, { w: { type: types[0], rowBytes: rb, ne0: ts[0]!.rowElems, rows: total, expertBytes: 0, glu: false, windows: [{ buf, first: 0, count: total, wOffset: 0 }] }, parts: rows, views: [] });
    return true;
  }

  /** Import alignment of view offsets inside a region (bytes below it go into wOffset). */
  private align(): number {
    return Math.max(4, this.info.minStorageBufferOffsetAlignment);
  }

  /**
   * Splits `units` units of unitBytes into windows whose bytes, plus `extra` (a GLU pair's
   * distance) and the view alignment slack, fit one binding.
   */
  private plan(name: string, units: number, unitBytes: number, extra: number): [number, number][] {
    const budget = this.o.maxBinding - extra - (this.o.mode === 'import' ? this.align() : 0);
    const per = Math.floor(budget / unitBytes);
    if (per < 1) throw new Error(`${name}: one ${unitBytes}-byte row or expert does not fit the largest binding (${this.o.maxBinding} bytes)`);
    const out: [number, number][] = [];
    for (let f = 0; f < units; f += per) out.push([f, Math.min(per, units - f)]);
    return out;
  }

  /**
   * Import regions: the weights (and gate+up pairs, which must share a region to be fused) are
   * grouped in file order into page-aligned ranges of about REGION bytes; a bigger one gets a
   * region of its own. Regions are imported when first used.
   */
  private planRegions(names: string[], more: TensorInfo[]): void {
    const f = this.o.file;
    const spans: [number, number][] = [];
    const inPair = new Set<string>();
    for (const t of names) {
      const m = /^(blk\.\d+\.ffn_)gate_(exps|shexp)\.weight$/.exec(t);
      const g = f.tensorByName.get(t)!, u = m ? f.tensorByName.get(`${m[1]}up_${m[2]}.weight`) : undefined;
      if (m && u) {
        spans.push([Math.min(g.offset, u.offset), Math.max(g.offset + g.nbytes, u.offset + u.nbytes)]);
        inPair.add(`${m[1]}up_${m[2]}.weight`);
      }
    }
    for (const t of names) if (!inPair.has(t) && !/gate_(exps|shexp)\.weight$/.test(t)) { const x = f.tensorByName.get(t)!; spans.push([x.offset, x.offset + x.nbytes]); }
    for (const x of more) spans.push([x.offset, x.offset + x.nbytes]);
    spans.sort((a, b) => a[0] - b[0]);
    const A = this.info.importAlignment;
    const merged: [number, number][] = [];
    for (const [s, e] of spans) {
      const last = merged[merged.length - 1];
      if (last && e - last[0] <= REGION && s >= last[0]) last[1] = Math.max(last[1], e);
      else merged.push([Math.floor(s / A) * A, e]);
    }
    this.spans = merged;
  }

  /** A view of file bytes [start, start + len) (one weight window) inside its import region. */
  private view(start: number, len: number, first: number, count: number): Window {
    const span = this.spans.find(([s, e]) => start >= s && start + len <= e);
    if (!span) throw new Error(`import: file range ${start}+${len} lies in no planned region`);
    let r = this.regions.get(span[0]);
    if (!r) {
      const bytes = span[1] - span[0];
      r = { buf: this.o.dev.importFile(this.o.file.path, span[0], bytes), start: span[0], bytes };
      this.made.push(r.buf);
      this.regions.set(span[0], r);
      this.importedBytes += bytes;
    }
    const rel = start - r.start, off = rel - (rel % this.align());
    const buf = this.o.dev.createView(r.buf, off, rel - off + len);
    this.made.push(buf);
    return { buf, first, count, wOffset: rel - off };
  }
}

/** The tensors the device holds: every required one except token_embd (embedded on the host). */
function deviceTensors(shape: ModelShape) {
  return requiredTensors(shape).filter((r) => r.name !== 'token_embd.weight');
}

/** A fresh copy of bytes [start, start+len) of a tensor. */
export function readBytes(fd: number, t: TensorInfo, start: number, len: number): Uint8Array {
  const b = new Uint8Array(len);
  readTensorBytes(fd, t, b, start, len);
  return b;
}

/**
 * The weights' bytes before loading (memory-plan.ts): those load() copies into device memory
 * (everything in upload mode; float weights and stack candidates in import mode; floats count as
 * F32) and those it imports from the file (zero-copy: the file's pages, pinned for the GPU; on
 * unified memory they take the same memory, and on amdgpu the same TTM limit, as the
 * allocations). Skipped tensors (streamed experts) are not loaded at all.
 */
export function weightBytesEstimate(file: GgufFile, shape: ModelShape, mode: WeightMode, skip?: (name: string) => boolean, more: TensorInfo[] = []): { copied: number; imported: number } {
  const stacked = new Set(STACKS.flatMap((st) => st.parts));
  let copied = 0, imported = 0;
  for (const t of more) if (mode === 'import') imported += t.nbytes; else copied += t.nbytes;
  for (const r of deviceTensors(shape)) {
    if (skip?.(r.name)) continue;
    const t = file.tensorByName.get(r.name)!;
    const float = r.types === 'float';
    if (mode === 'import' && !float && !stacked.has(r.name.replace(/^blk\.\d+\./, ''))) { imported += t.nbytes; continue; }
    copied += float ? t.rows * t.rowElems * 4 : t.nbytes;
  }
  return { copied, imported };
}
