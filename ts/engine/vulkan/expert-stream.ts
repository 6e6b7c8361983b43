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
 * are the same bits.
 */
import * as fs from 'node:fs';
import type { GgufFile, TensorInfo } from '../../gguf/index.js';
import type { ModelShape } from '../../model/shape.js';
import type { VkDevice } from '../../vk/addon.js';
import { ExpertCache, type ExpertCacheOptions, type ExpertLoad } from '../expert-cache.js';
import type { DevTensor } from './weights.js';

/** Slot strides and part offsets start at multiples of this. */
const SLOT_ALIGN = 256;
/** Positioned reads in flight at once (libuv's worker threads run them: 4 unless UV_THREADPOOL_SIZE says otherwise). */
const READS_IN_FLIGHT = 16;
/** Host-visible stage for one batch of slots (staged reads). */
const STAGE_BYTES = 64 << 20;
/** Largest merged read: large enough to stream a tensor, small enough to keep several reads in flight. */
const MERGE_BYTES = 8 << 20;
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

/** Routed-expert tensor names of a layer (what streaming leaves out of the resident weights). */
export const isRoutedExpert = (name: string) => /^blk\.\d+\.ffn_(gate|up|down)_exps\.weight$/.test(name);

/**
 * The parts of each layer's slot: gate and up fused when they agree in type and shape (as
 * weights.ts fuses them), then down; and the slot stride (the largest layer's total).
 */
export function slotLayout(file: GgufFile, s: ModelShape, fullLayers: number): { parts: Part[][]; slotBytes: number } {
  const parts: Part[][] = [];
  let slotBytes = 0;
  for (let l = 0; l < s.nLayer; l++) {
    if (l < fullLayers) { parts.push([]); continue; }
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
    slotBytes = Math.max(slotBytes, o);
  }
  return { parts, slotBytes };
}

export interface StreamOptions {
  dev: VkDevice;
  file: GgufFile;
  /** the model file, open for reading */
  fd: number;
  shape: ModelShape;
  slots: number;
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
  readonly slotBytes: number;
  readonly fullLayers: number;
  readonly slots: number;
  private readonly parts: Part[][];
  /** the slot pool: buffers of whole slots, slots [first, first + count) in each (direct: and their memory) */
  private readonly pool: { buf: number; first: number; count: number; mem?: Uint8Array }[] = [];
  /** staged reads: a host-visible buffer the reads land in, and its memory */
  private stage?: { buf: number; mem: Uint8Array };

  constructor(private readonly o: StreamOptions) {
    const s = o.shape;
    ({ parts: this.parts, slotBytes: this.slotBytes } = slotLayout(o.file, s, o.fullLayers));
    this.fullLayers = o.fullLayers;
    this.slots = o.slots;
    const per = Math.floor(o.maxBinding / this.slotBytes);
    if (o.slots > 0 && per < 1) throw new Error(`one expert slot (${this.slotBytes} bytes) exceeds the device's largest binding (${o.maxBinding} bytes)`);
    try {
      for (let f = 0; f < o.slots; f += per) {
        const count = Math.min(per, o.slots - f);
        const buf = o.dev.createBuffer(count * this.slotBytes, o.direct);
        this.pool.push({ buf, first: f, count, mem: o.direct ? new Uint8Array(o.dev.mapped(buf)) : undefined });
      }
      if (!o.direct && o.slots > 0) {
        const bytes = Math.max(this.slotBytes, Math.min(STAGE_BYTES, o.slots * this.slotBytes));
        const buf = o.dev.createBuffer(bytes, true);
        this.stage = { buf, mem: new Uint8Array(o.dev.mapped(buf)) };
      }
    } catch (e) {
      this.free();
      throw e;
    }
    this.cache = new ExpertCache({ nLayer: s.nLayer, nExpert: s.nExpert, slots: o.slots, fullLayers: o.fullLayers, usage: o.usage });
  }

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
    for (const layer of this.parts) {
      for (const p of layer) {
        const src = p.src[0], glu = p.src.length === 2;
        t.set(p.key, {
          type: src.type, rowBytes: src.rowBytes, ne0: src.rowElems, rows: src.rows / this.o.shape.nExpert, expertBytes: this.slotBytes, glu,
          windows: this.pool.map((w) => ({ buf: w.buf, first: w.first, count: w.count, wOffset: p.offset, upBytes: glu ? p.per : undefined })),
        });
      }
    }
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
    const per = Math.max(1, Math.floor(stageBytes / this.slotBytes));
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
          reads.push([p.pos, p.n, w.mem!, (p.slot - w.first) * this.slotBytes + p.at]);
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
          for (const p of parts) if (p.slot >= w.first && p.slot < w.first + w.count) regions.push((p.slot - w.first) * this.slotBytes + p.at, p.stage, p.n);
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

  /** Layer l's (token, expert) pairs' expert ids → their slots, reading the missing experts first. */
  async slotsFor(l: number, ids: Uint32Array): Promise<Uint32Array> {
    const p = this.cache.plan(l, ids);
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
