/**
 * SSD expert streaming on the Vulkan engine (--ssd-streaming): the routed experts of layers
 * [fullLayers, nLayer) are not loaded; a pool of expert slots in device memory holds the ones in
 * use, filled from the GGUF on a miss (policy: expert-cache.ts, shared with the CPU engine).
 *
 * The step is recorded in segments cut after each streamed layer's routing (step.ts). Between
 * two segments the host reads that layer's expert ids, makes them resident, and rewrites IDS as
 * slot ids (and, for a multi-token step, the pairs grouped by slot: LIST/TILES, what moe_tiles
 * would have computed). The expert kernels are the resident ones, bound to the slot pool as if
 * it were one expert tensor of `slots` experts `slotBytes` apart (windows of it where one binding
 * is too small): each (token, expert) pair is computed exactly as when resident, so the logits
 * are the same bits. Layers whose experts differ in size (a q2-q4 model's Q4_K layers) have slot
 * classes of their own size, each its own pool: one stride for all would waste half of every
 * small layer's slot.
 */
import * as fs from 'node:fs';
import type { GgufFile, TensorInfo } from '../../gguf/index.js';
import type { ModelShape } from '../../model/shape.js';
import type { VkDevice } from '../../vk/addon.js';
import { ExpertCache, type ExpertCacheOptions, type ExpertLoad } from '../expert-cache.js';
import { STREAMING } from '../defaults.js';
import type { DevTensor } from './weights.js';

/** Slot strides and part offsets start at multiples of this. */
const SLOT_ALIGN = 256;
/** (defaults.ts: reads in flight, the stage, the largest merged read) */
const { readsInFlight: READS_IN_FLIGHT, stageBytes: STAGE_BYTES, mergeBytes: MERGE_BYTES } = STREAMING;
const up = (n: number) => Math.ceil(n / SLOT_ALIGN) * SLOT_ALIGN;

/** One routed-expert tensor of a streamed layer, as the slots hold it. */
interface Part {
  /** the tensor key the step multiplies (ffn_gate_up_exps for a fused gate+up pair) */
  key: string;
  /** the file tensors whose expert e is copied in, back to back (gate then up for a GLU) */
  src: TensorInfo[];
  /** bytes of one expert of each src tensor, and where the first lands in a slot */
  per: number;
  offset: number;
}

/** A slot class: the streamed layers whose experts take slotBytes (their layout's size). */
export interface SlotClass { slotBytes: number; layers: number[] }

/**
 * The parts of each streamed layer's slot: gate and up fused when they agree in type and shape
 * (as weights.ts fuses them), then down; and the slot classes (layers grouped by slot size,
 * smallest first; `uniform`: one class of the largest size, for caches too small to give every
 * size its own layer's worth).
 */
export interface SlotLayout { parts: Part[][]; classes: SlotClass[]; classOf: number[] }

export function slotLayout(file: GgufFile, s: ModelShape, fullLayers: number, uniform = false): SlotLayout {
  const parts: Part[][] = [], sizes: number[] = [];
  for (let l = 0; l < s.nLayer; l++) {
    if (l < fullLayers) { parts.push([]); sizes.push(0); continue; }
    const t = (p: string) => file.tensorByName.get(`blk.${l}.ffn_${p}_exps.weight`)!;
    const g = t('gate'), u = t('up'), d = t('down');
    const per = (x: TensorInfo) => x.nbytes / s.nExpert;
    const layer: Part[] = [];
    let o = 0;
    if (g.type === u.type && g.rowElems === u.rowElems && g.rows === u.rows) {
      layer.push({ key: `blk.${l}.ffn_gate_up_exps.weight`, src: [g, u], per: per(g), offset: 0 });
      o = up(2 * per(g));
    } else {
      layer.push({ key: g.name, src: [g], per: per(g), offset: 0 });
      o = up(per(g));
      layer.push({ key: u.name, src: [u], per: per(u), offset: o });
      o += up(per(u));
    }
    layer.push({ key: d.name, src: [d], per: per(d), offset: o });
    o += up(per(d));
    parts.push(layer);
    sizes.push(o);
  }
  if (uniform) { const m = Math.max(0, ...sizes); sizes.forEach((b, l) => { if (b > 0) sizes[l] = m; }); }
  const classes = [...new Set(sizes.filter((b) => b > 0))].sort((a, b) => a - b).map((slotBytes) => ({ slotBytes, layers: sizes.flatMap((b, l) => (b === slotBytes ? [l] : [])) }));
  return { parts, classes, classOf: sizes.map((b) => classes.findIndex((c) => c.slotBytes === b)) };
}

/**
 * Slots per class for a cache of `bytes` (or of `slots` experts): first `min` per class (one
 * layer's experts, which a prefill chunk may need at once) where the cache covers that, then the
 * rest by each class's share of the streamed experts' bytes (so every streamed layer keeps about
 * the same fraction of its experts), never more than all of a class's experts.
 */
export function splitSlots(classes: SlotClass[], nExpert: number, min: number, ask: { bytes?: number; slots?: number }): number[] {
  const most = classes.map((c) => c.layers.length * nExpert);
  const size = (i: number) => (ask.slots !== undefined ? 1 : classes[i].slotBytes);
  let left = ask.slots ?? ask.bytes ?? 0;
  const floor = classes.map((_, i) => Math.min(most[i], min));
  const floorCost = floor.reduce((a, f, i) => a + f * size(i), 0);
  const n = floorCost <= left ? floor.slice() : classes.map(() => 0);
  if (floorCost <= left) left -= floorCost;
  // rounds: the classes with room share what is left by their experts' bytes; full ones drop out
  let open = classes.map((_, i) => i).filter((i) => n[i] < most[i]);
  while (open.length && left > 0) {
    const weight = open.reduce((a, i) => a + most[i] * classes[i].slotBytes, 0);
    let spent = 0;
    for (const i of open) {
      const k = Math.min(most[i] - n[i], Math.floor(left * most[i] * classes[i].slotBytes / weight / size(i)));
      n[i] += k; spent += k * size(i);
    }
    const next = open.filter((i) => n[i] < most[i]);
    if (spent === 0 || next.length === open.length) {
      // what rounding left: whole slots to the classes with room, in order
      for (const i of next) { const k = Math.min(most[i] - n[i], Math.floor((left - spent) / size(i))); n[i] += k; spent += k * size(i); }
      break;
    }
    left -= spent;
    open = next;
  }
  return n;
}

export interface StreamOptions {
  dev: VkDevice;
  file: GgufFile;
  /** the model file, open for reading */
  fd: number;
  shape: ModelShape;
  /** the slots' layout (slotLayout: the engine's plan chose it) and the slots per class, in its order */
  layout: SlotLayout;
  slots: number[];
  fullLayers: number;
  /** the largest binding in bytes */
  maxBinding: number;
  usage?: ExpertCacheOptions['usage'];
  /**
   * Slots in host-visible memory, read into in place (unified memory: the GPU's memory is the
   * host's); else device-local slots filled from a host-visible stage by device copies.
   */
  direct: boolean;
}

export class VkExpertStream {
  readonly cache: ExpertCache;
  readonly fullLayers: number;
  readonly classes: SlotClass[];
  private readonly classOf: number[];
  private readonly parts: Part[][];
  /** the largest slot (a stage holds at least one) */
  private readonly biggest: number;
  /**
   * The slot pools: buffers of whole slots of one class, global slots [first, first + count) in
   * each (slot ids run class after class), and their memory where they are read into in place
   */
  private readonly pool: { buf: number; cls: number; slotBytes: number; first: number; count: number; mem?: Uint8Array }[] = [];
  /** staged reads: a host-visible buffer the reads land in, and its memory */
  private stage?: { buf: number; mem: Uint8Array };

  constructor(private readonly o: StreamOptions) {
    const s = o.shape;
    ({ parts: this.parts, classes: this.classes, classOf: this.classOf } = o.layout);
    this.biggest = Math.max(0, ...this.classes.map((c) => c.slotBytes));
    this.fullLayers = o.fullLayers;
    if (o.slots.length !== this.classes.length) throw new Error(`expert streaming: ${o.slots.length} slot counts for ${this.classes.length} slot classes`);
    try {
      let first = 0;
      this.classes.forEach((c, cls) => {
        const per = Math.floor(o.maxBinding / c.slotBytes);
        if (o.slots[cls] > 0 && per < 1) throw new Error(`one expert slot (${c.slotBytes} bytes) exceeds the device's largest binding (${o.maxBinding} bytes)`);
        for (let f = 0; f < o.slots[cls]; f += per) {
          const count = Math.min(per, o.slots[cls] - f);
          const buf = o.dev.createBuffer(count * c.slotBytes, o.direct);
          this.pool.push({ buf, cls, slotBytes: c.slotBytes, first: first + f, count, mem: o.direct ? new Uint8Array(o.dev.mapped(buf)) : undefined });
        }
        first += o.slots[cls];
      });
      if (!o.direct && first > 0) {
        const bytes = Math.max(this.biggest, Math.min(STAGE_BYTES, this.bytes));
        const buf = o.dev.createBuffer(bytes, true);
        this.stage = { buf, mem: new Uint8Array(o.dev.mapped(buf)) };
      }
    } catch (e) {
      this.free();
      throw e;
    }
    this.cache = new ExpertCache({ nLayer: s.nLayer, nExpert: s.nExpert, slots: o.slots, classOf: (l) => this.classOf[l], fullLayers: o.fullLayers, usage: o.usage });
  }

  /** slots in all, and the bytes they take */
  get slots(): number { return this.o.slots.reduce((a, b) => a + b, 0); }
  get bytes(): number { return this.o.slots.reduce((a, n, i) => a + n * this.classes[i].slotBytes, 0); }

  /** The warm start (expert-cache.ts): the hotlist's experts read into their slots. */
  async warm(): Promise<void> {
    const loads = this.cache.warmLoads();
    try { await this.read(loads); } catch (e) { this.cache.failed(loads); throw e; }
  }

  /** how reads reach the slots, for describe() */
  get how(): string {
    return this.stage ? `filled through a ${(this.stage.mem.byteLength / 2 ** 20).toFixed(1)} MiB host stage` : 'read into in place (host-visible)';
  }

  /** whether layer l's experts stream (the step is cut after its routing) */
  streams(l: number): boolean {
    return l >= this.fullLayers && l < this.o.shape.nLayer;
  }

  /** The streamed layers' expert tensors as views of the slot pool, for the step's matvecs. */
  install(t: Map<string, DevTensor>): void {
    this.parts.forEach((layer, l) => {
      const cls = this.classOf[l];
      for (const p of layer) {
        const src = p.src[0], glu = p.src.length === 2;
        t.set(p.key, {
          type: src.type, rowBytes: src.rowBytes, ne0: src.rowElems, rows: src.rows / this.o.shape.nExpert, expertBytes: this.classes[cls].slotBytes, glu,
          windows: this.pool.filter((w) => w.cls === cls).map((w) => ({ buf: w.buf, first: w.first, count: w.count, wOffset: p.offset, upBytes: glu ? p.per : undefined })),
        });
      }
    });
  }

  /**
   * Reads the loads' experts with positioned reads (from libuv's worker threads, a bounded number
   * in flight). Direct: each part straight into its slot. Staged: into the host-visible stage, a
   * batch at a time, in file order with adjacent parts merged (a prefill that needs every expert
   * of a layer reads each tensor in a few large reads), then one device copy per pool buffer
   * takes each part to its slot.
   */
  private async read(loads: ExpertLoad[]): Promise<void> {
    const st = this.cache.stats;
    const stageBytes = this.stage?.mem.byteLength ?? Infinity;
    const per = Math.max(1, Math.floor(stageBytes / this.biggest));
    for (let b0 = 0; b0 < loads.length; b0 += per) {
      const batch = loads.slice(b0, b0 + per);
      // every part of every expert in the batch, in file order
      const parts: { pos: number; n: number; slot: number; at: number; stage: number }[] = [];
      for (const { layer, e, slot } of batch) {
        for (const p of this.parts[layer]) p.src.forEach((t, k) => parts.push({ pos: t.offset + e * p.per, n: p.per, slot, at: p.offset + k * p.per, stage: 0 }));
      }
      parts.sort((a, b) => a.pos - b.pos);
      // reads: [file position, bytes, destination memory, offset there]
      const reads: [number, number, Uint8Array, number][] = [];
      let bytes = 0;
      for (const p of parts) {
        if (!this.stage) {
          const w = this.window(p.slot);
          reads.push([p.pos, p.n, w.mem!, (p.slot - w.first) * w.slotBytes + p.at]);
        } else {
          const last = reads[reads.length - 1];
          if (last && last[0] + last[1] === p.pos && last[1] + p.n <= MERGE_BYTES) last[1] += p.n;
          else reads.push([p.pos, p.n, this.stage.mem, bytes]);
          p.stage = bytes;
        }
        bytes += p.n;
      }
      const t0 = performance.now();
      let next = 0;
      const worker = async () => {
        while (next < reads.length) {
          const [pos, n, mem, to] = reads[next++];
          await this.readAt(pos, n, mem, to);
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, reads.length) }, worker));
      const t1 = performance.now();
      if (this.stage) {
        for (const w of this.pool) {
          const regions: number[] = [];
          for (const p of parts) if (p.slot >= w.first && p.slot < w.first + w.count) regions.push((p.slot - w.first) * w.slotBytes + p.at, p.stage, p.n);
          if (regions.length) this.o.dev.copyRegions(w.buf, this.stage.buf, Float64Array.from(regions));
        }
      }
      st.readMs += t1 - t0;
      st.copyMs += performance.now() - t1;
      st.bytesRead += bytes;
    }
  }

  private window(slot: number) {
    return this.pool.find((x) => slot >= x.first && slot < x.first + x.count)!;
  }

  /** n bytes of the model file from byte `pos` into mem at `to`; an error names the file. */
  private async readAt(pos: number, n: number, mem: Uint8Array, to: number): Promise<void> {
    for (let got = 0; got < n;) {
      let r: number;
      try {
        r = await new Promise<number>((ok, fail) => fs.read(this.o.fd, mem, to + got, n - got, pos + got, (err, bytes) => (err ? fail(err) : ok(bytes))));
      } catch (err) {
        throw new Error(`${this.o.file.path}: ${(err as Error).message}`);
      }
      if (r <= 0) throw new Error(`${this.o.file.path}: short read at byte ${pos + got} (file truncated?)`);
      got += r;
    }
  }

  /** Layer l's (token, expert) pairs' expert ids → their slots, reading the missing experts first (transient: a multi-token step's, expert-cache.ts). */
  async slotsFor(l: number, ids: Uint32Array, transient: boolean): Promise<Uint32Array> {
    const p = this.cache.plan(l, ids, transient);
    try { await this.read(p.loads); } catch (e) { this.cache.failed(p.loads); throw e; }
    return Uint32Array.from(p.slots!);
  }

  free(): void {
    // (the mapped views go first: their memory ends with the buffers)
    for (const w of this.pool) { w.mem = undefined; this.o.dev.freeBuffer(w.buf); }
    this.pool.length = 0;
    if (this.stage) { const b = this.stage.buf; this.stage = undefined; this.o.dev.freeBuffer(b); }
  }
}

/**
 * What moe_tiles.comp computes, on the host, for pairs already holding slot ids: LIST (pair
 * indices grouped by slot, ascending) and TILES (count, then (slot, first, n ≤ bn, 0) per tile).
 */
export function tilesFor(slots: Uint32Array, bn: number): { list: Uint32Array; tiles: Uint32Array } {
  const order = Array.from(slots.keys()).sort((a, b) => slots[a] - slots[b] || a - b);
  const tiles: number[] = [0, 0, 0, 0];
  let n = 0;
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j < order.length && slots[order[j]] === slots[order[i]]) j++;
    for (let f = i; f < j; f += bn) { tiles.push(slots[order[i]], f, Math.min(bn, j - f), 0); n++; }
    i = j;
  }
  tiles[0] = n;
  return { list: Uint32Array.from(order), tiles: Uint32Array.from(tiles) };
}
