// Byte-level BPE merges over linear memory. JS registers the merge table once (pair → rank,
// merged id); `bpeMerge` then rewrites a word's symbol ids in place, lowest rank first and, among
// equal ranks, leftmost first — the order Hugging Face tokenizers uses. No allocation per call:
// the caller passes a work area of bpeWorkBytes(n) bytes.

const EMPTY: u64 = 0xffffffffffffffff;
let table: usize = 0; // entries of 16 bytes: key u64 (left << 32 | right), rank i32, result i32
let mask: u32 = 0;

// @ts-ignore: decorator
@inline function slot(key: u64): u32 {
  let h = key * 0x9e3779b97f4a7c15;
  h ^= h >> 29;
  return <u32>h & mask;
}

/** Takes a zero-initialised region of capacity × 16 bytes (capacity a power of two ≥ 2 × merges). */
export function bpeInit(ptr: usize, capacity: u32): void {
  table = ptr;
  mask = capacity - 1;
  for (let i: u32 = 0; i < capacity; i++) store<u64>(ptr + (<usize>i << 4), EMPTY);
}

export function bpeAddMerge(left: i32, right: i32, rank: i32, result: i32): void {
  const key = (<u64><u32>left << 32) | <u64><u32>right;
  let i = slot(key);
  while (true) {
    const p = table + (<usize>i << 4);
    const k = load<u64>(p);
    if (k == EMPTY || k == key) {
      if (k == key && load<i32>(p, 8) <= rank) return; // keep the first (lowest-rank) duplicate
      store<u64>(p, key);
      store<i32>(p, rank, 8);
      store<i32>(p, result, 12);
      return;
    }
    i = (i + 1) & mask;
  }
}

/** Rank of a pair (−1 if it does not merge); the merged id is left in `lastResult`. */
let lastResult: i32 = 0;
function lookup(left: i32, right: i32): i32 {
  const key = (<u64><u32>left << 32) | <u64><u32>right;
  let i = slot(key);
  while (true) {
    const p = table + (<usize>i << 4);
    const k = load<u64>(p);
    if (k == key) { lastResult = load<i32>(p, 12); return load<i32>(p, 8); }
    if (k == EMPTY) return -1;
    i = (i + 1) & mask;
  }
}

export function bpeWorkBytes(n: i32): usize {
  return <usize>n * 8 + <usize>n * 3 * 16 + 64;
}

// Heap entries (16 bytes): rank, left position, left id, right id. Ordered by (rank, position).
let heap: usize = 0;
let heapLen: i32 = 0;

// @ts-ignore: decorator
@inline function less(a: usize, b: usize): bool {
  const ra = load<i32>(a), rb = load<i32>(b);
  return ra < rb || (ra == rb && load<i32>(a, 4) < load<i32>(b, 4));
}

function swap(a: usize, b: usize): void {
  const x = v128.load(a);
  v128.store(a, v128.load(b));
  v128.store(b, x);
}

function push(rank: i32, pos: i32, l: i32, r: i32): void {
  let i = heapLen++;
  const p = heap + (<usize>i << 4);
  store<i32>(p, rank); store<i32>(p, pos, 4); store<i32>(p, l, 8); store<i32>(p, r, 12);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const a = heap + (<usize>i << 4), b = heap + (<usize>parent << 4);
    if (!less(a, b)) break;
    swap(a, b);
    i = parent;
  }
}

function popTo(out: usize): void {
  v128.store(out, v128.load(heap));
  heapLen--;
  if (heapLen == 0) return;
  v128.store(heap, v128.load(heap + (<usize>heapLen << 4)));
  let i = 0;
  while (true) {
    const l = 2 * i + 1, r = l + 1;
    let m = i;
    if (l < heapLen && less(heap + (<usize>l << 4), heap + (<usize>m << 4))) m = l;
    if (r < heapLen && less(heap + (<usize>r << 4), heap + (<usize>m << 4))) m = r;
    if (m == i) break;
    swap(heap + (<usize>i << 4), heap + (<usize>m << 4));
    i = m;
  }
}

/**
 * Merges the n symbol ids at `syms` (i32) in place and returns the new count.
 * Symbols are a doubly linked list over positions; a heap holds candidate pairs, validated on pop.
 */
export function bpeMerge(syms: usize, n: i32, work: usize): i32 {
  if (n < 2) return n;
  const prev = work, next = work + (<usize>n << 2);
  heap = work + (<usize>n << 3);
  heapLen = 0;
  for (let i = 0; i < n; i++) {
    store<i32>(prev + (<usize>i << 2), i - 1);
    store<i32>(next + (<usize>i << 2), i + 1 < n ? i + 1 : -1);
  }
  for (let i = 0; i + 1 < n; i++) {
    const l = load<i32>(syms + (<usize>i << 2)), r = load<i32>(syms + (<usize>(i + 1) << 2));
    const rank = lookup(l, r);
    if (rank >= 0) push(rank, i, l, r);
  }
  const top = heap + (<usize>(3 * n) << 4); // one spare entry past the heap's capacity
  while (heapLen > 0) {
    popTo(top);
    const pos = load<i32>(top, 4);
    const l = load<i32>(top, 8), r = load<i32>(top, 12);
    // stale entry: the left symbol changed, or its right neighbour is no longer r
    if (load<i32>(syms + (<usize>pos << 2)) != l) continue;
    const rp = load<i32>(next + (<usize>pos << 2));
    if (rp < 0 || load<i32>(syms + (<usize>rp << 2)) != r) continue;
    lookup(l, r);
    const merged = lastResult;
    store<i32>(syms + (<usize>pos << 2), merged);
    store<i32>(syms + (<usize>rp << 2), -1); // tombstone
    const rn = load<i32>(next + (<usize>rp << 2));
    store<i32>(next + (<usize>pos << 2), rn);
    if (rn >= 0) store<i32>(prev + (<usize>rn << 2), pos);
    const lp = load<i32>(prev + (<usize>pos << 2));
    if (lp >= 0) {
      const lt = load<i32>(syms + (<usize>lp << 2));
      const rank = lookup(lt, merged);
      if (rank >= 0) push(rank, lp, lt, merged);
    }
    if (rn >= 0) {
      const rt = load<i32>(syms + (<usize>rn << 2));
      const rank = lookup(merged, rt);
      if (rank >= 0) push(rank, pos, merged, rt);
    }
  }
  // compact: drop tombstones
  let m = 0;
  for (let i = 0; i < n; i++) {
    const s = load<i32>(syms + (<usize>i << 2));
    if (s >= 0) store<i32>(syms + (<usize>(m++) << 2), s);
  }
  return m;
}
