/**
 * The SSD-streaming expert cache's policy, shared by both backends: which (layer, expert) lives
 * in which of a fixed number of slots, least recently used out first, never an expert the
 * current call needs (pinned). The backends own the memory (WASM slots, device slot buffers) and
 * do the reads through `load`; this module only decides, counts, and remembers use for the warm
 * start (expert-usage.ts).
 */
import { addUsage, hotlist, readUsage } from './expert-usage.js';

export interface ExpertStats {
  streaming: boolean;
  slots: number;
  /** experts a forward call needed that were already in a slot, and those that had to be read */
  hits: number;
  misses: number;
  /** bytes read from the model file for experts (misses and the warm start) */
  bytesRead: number;
  /** experts loaded at start from the usage hotlist */
  preloaded: number;
  /** wall ms spent reading experts from the file, and copying them into device slots (Vulkan) */
  readMs: number;
  copyMs: number;
}

/** Expert e of layer is to be read into slot. */
export interface ExpertLoad { layer: number; e: number; slot: number }

export interface ExpertCacheOptions {
  nLayer: number;
  nExpert: number;
  /**
   * Slots, or slots per class: layers whose experts differ in size (a q2-q4 model's Q4_K layers)
   * keep them in slots of their own size, so each class has its own slots (numbered one after
   * the other) and evicts only among them. classOf(layer) gives a layer's class (default 0).
   */
  slots: number | number[];
  classOf?: (layer: number) => number;
  /** layers [0, fullLayers) have resident experts: they are counted, never cached */
  fullLayers: number;
  /** reads expert e of layer into slot, for ensure() and warmStart() (callers of plan() read themselves) */
  load?(layer: number, e: number, slot: number): void;
  /** expert e of layer leaves slot (the backend forgets where it was) */
  evict?(layer: number, e: number, slot: number): void;
  /** warm start: the usage file and the model's fingerprint; preload count (default: all slots), or cold */
  usage?: { file: string; model: string; preload?: number; cold?: boolean };
}

/** One class's slots: the free ones, and the taken ones' keys by recency (Map insertion order). */
interface SlotClass {
  free: number[];
  /** the regular entries, least recently used first */
  lru: Map<number, true>;
  /**
   * Entries a multi-token step loaded into a full class: evicted before any regular entry, so
   * that a prefill sweeping more experts than fit cycles through a few slots instead of evicting
   * everything ahead of its own next use (LRU's worst case: every chunk would miss everything).
   */
  transient: Map<number, true>;
}

export class ExpertCache {
  readonly stats: ExpertStats;
  private classes: SlotClass[];
  private keySlot = new Map<number, number>();
  /** routes taken since the engine opened, per key (added to the usage file by saveUsage) */
  private useCounts: Float64Array;
  /** what the warm start did, for describe() */
  warm = '';

  constructor(private readonly o: ExpertCacheOptions) {
    const counts = typeof o.slots === 'number' ? [o.slots] : o.slots;
    let first = 0;
    this.classes = counts.map((n) => {
      // free slots popped lowest first
      const c = { free: Array.from({ length: n }, (_, i) => first + n - 1 - i), lru: new Map<number, true>(), transient: new Map<number, true>() };
      first += n;
      return c;
    });
    this.useCounts = new Float64Array(o.nLayer * o.nExpert);
    this.stats = { streaming: true, slots: first, hits: 0, misses: 0, bytesRead: 0, preloaded: 0, readMs: 0, copyMs: 0 };
  }

  private classOf(layer: number): SlotClass {
    return this.classes[this.o.classOf?.(layer) ?? 0];
  }

  /**
   * Makes the distinct experts `ids` of `layer` resident (each counted once as used), reading the
   * missing ones through `load` one by one, and returns the slot of each id, in order (undefined
   * for a full layer: its experts are not cached). `transient`: as plan().
   */
  ensure(layer: number, ids: ArrayLike<number>, transient = false): number[] | undefined {
    const p = this.plan(layer, ids, transient);
    this.loadEach(p.loads);
    return p.slots;
  }

  /**
   * ensure() without the reads: the slot of each id and the loads that must complete before
   * those slots hold their experts (the caller reads them, all at once if it likes, and calls
   * failed() with them if that goes wrong). `transient`: a multi-token step's loads (see SlotClass).
   */
  plan(layer: number, ids: ArrayLike<number>, transient = false): { slots?: number[]; loads: ExpertLoad[] } {
    const n = this.o.nExpert, want = [...new Set(Array.from(ids))];
    for (const e of want) {
      if (!(e >= 0 && e < n)) throw new RangeError(`layer ${layer}: routed expert id ${e} is outside 0..${n - 1}`);
      this.useCounts[layer * n + e]++;
    }
    if (layer < this.o.fullLayers) { this.stats.hits += want.length; return { loads: [] }; }
    const c = this.classOf(layer);
    const pinned = new Set(want.map((e) => layer * n + e)), loads: ExpertLoad[] = [];
    for (const e of want) {
      const key = layer * n + e;
      if (this.keySlot.has(key)) {
        this.stats.hits++;
        // a regular use makes an entry regular and most recent; a transient one stays where it is
        if (c.lru.delete(key) || !transient) { c.transient.delete(key); c.lru.set(key, true); }
        continue;
      }
      this.stats.misses++;
      loads.push({ layer, e, slot: this.place(key, c, pinned, transient) });
    }
    return { slots: Array.from(ids, (e) => this.keySlot.get(layer * n + e)!), loads };
  }

  /** Loads that did not complete: their slots are free again (no expert is taken for bytes that are not there). */
  failed(loads: ExpertLoad[]): void {
    const n = this.o.nExpert;
    for (const { layer, e, slot } of loads) {
      const key = layer * n + e;
      if (this.keySlot.get(key) !== slot) continue;
      const c = this.classOf(layer);
      this.keySlot.delete(key);
      c.lru.delete(key);
      c.transient.delete(key);
      c.free.push(slot);
    }
  }

  private loadEach(loads: ExpertLoad[]): void {
    for (let i = 0; i < loads.length; i++) {
      try {
        this.o.load!(loads[i].layer, loads[i].e, loads[i].slot);
      } catch (err) {
        this.failed(loads.slice(i));
        throw err;
      }
    }
  }

  /**
   * A slot of class c for key: a free one, else the oldest transient entry's, else the least
   * recently used regular one's — never a pinned one (its expert is evicted).
   */
  private place(key: number, c: SlotClass, pinned: Set<number>, transient: boolean): number {
    const n = this.o.nExpert;
    let slot = c.free.pop();
    const full = slot === undefined;
    if (slot === undefined) {
      for (const m of [c.transient, c.lru]) {
        for (const old of m.keys()) {
          if (pinned.has(old)) continue;
          slot = this.keySlot.get(old)!;
          this.keySlot.delete(old);
          m.delete(old);
          this.o.evict?.(Math.floor(old / n), old % n, slot);
          break;
        }
        if (slot !== undefined) break;
      }
      if (slot === undefined) throw new Error(`expert cache too small: ${this.stats.slots} slots cannot hold the ${pinned.size} experts one step needs`);
    }
    this.keySlot.set(key, slot);
    (full && transient ? c.transient : c.lru).set(key, true);
    return slot;
  }

  /**
   * The warm start's loads: the most used experts of the usage file (as many as each class
   * holds), least used first so that the most used end as the most recently used (the LRU
   * evicts the others first). Slots are taken now; the caller reads them (warmStart() does, one
   * by one).
   */
  warmLoads(): ExpertLoad[] {
    const u = this.o.usage;
    if (!u) return [];
    if (u.cold) { this.warm = 'cold start (--ssd-streaming-cold)'; return []; }
    const { nLayer, nExpert, fullLayers } = this.o;
    const { counts, problem } = readUsage(u.file, u.model, nLayer, nExpert);
    const room = new Map(this.classes.map((c) => [c, c.free.length]));
    const keys: number[] = [];
    // (resident full layers need no preloading)
    for (const k of hotlist(counts)) {
      const layer = Math.floor(k / nExpert), c = this.classOf(layer);
      if (keys.length >= (u.preload ?? Infinity)) break;
      if (layer < fullLayers || room.get(c)! <= 0) continue;
      room.set(c, room.get(c)! - 1);
      keys.push(k);
    }
    const loads = keys.reverse().map((key) => {
      const layer = Math.floor(key / nExpert);
      return { layer, e: key % nExpert, slot: this.place(key, this.classOf(layer), new Set(), false) };
    });
    this.stats.preloaded = loads.length;
    this.warm = problem ? `usage file ignored: ${problem}` : `${loads.length} experts preloaded from ${u.file}`;
    return loads;
  }

  /** The warm start, read one by one through `load`. */
  warmStart(): void {
    this.loadEach(this.warmLoads());
  }

  /** Adds this run's routes to the usage file (no file: nothing). */
  saveUsage(): void {
    const u = this.o.usage;
    if (!u) return;
    addUsage(u.file, u.model, this.o.nLayer, this.o.nExpert, this.useCounts);
    this.useCounts.fill(0);
  }
}

/**
 * Fewest slots a streaming cache may have: one step may route to every expert of a layer (a
 * prefill chunk), so all of one layer's experts must fit at once (none when every layer is
 * resident).
 */
export function minExpertSlots(o: { nLayer: number; nExpert: number; nExpertUsed: number; fullLayers: number; chunk: number }): number {
  return o.fullLayers < o.nLayer ? Math.min(o.nExpert, o.chunk * o.nExpertUsed) : 0;
}
