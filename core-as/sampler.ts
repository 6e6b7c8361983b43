// Token sampling over a logits row: greedy, or temperature + top-k + top-p + min-p with a seeded
// PRNG (splitmix64 state owned by the caller), so the same seed gives the same text.

import { alloc } from './mem';

let cand: usize = 0; // i32 candidate ids
let prob: usize = 0; // f32 candidate weights
let capacity: i32 = 0;

function reserve(n: i32): bool {
  if (n <= capacity) return true;
  cand = alloc(<usize>n << 2);
  prob = alloc(<usize>n << 2);
  if (cand == 0 || prob == 0) return false;
  capacity = n;
  return true;
}

// @ts-ignore: decorator
@inline function lg(p: usize, i: i32): f32 { return load<f32>(p + (<usize>i << 2)); }
// @ts-ignore: decorator
@inline function cid(i: i32): i32 { return load<i32>(cand + (<usize>i << 2)); }

/** Index of the largest logit (lowest id on ties). */
export function argmax(logits: usize, n: i32): i32 {
  let best = 0;
  let bv = lg(logits, 0);
  for (let i = 1; i < n; i++) { const v = lg(logits, i); if (v > bv) { bv = v; best = i; } }
  return best;
}

/** splitmix64 step on the u64 at `state`; returns a float in [0, 1). */
export function rngNext(state: usize): f64 {
  let z = load<u64>(state) + 0x9e3779b97f4a7c15;
  store<u64>(state, z);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  z = z ^ (z >> 31);
  return <f64>(z >> 11) * (1.0 / 9007199254740992.0);
}

/** Sorts candidates [0, m) by logit, descending (ids ascending on ties): heapsort. */
function sortCandidates(logits: usize, m: i32): void {
  for (let start = (m >> 1) - 1; start >= 0; start--) siftDown(logits, start, m);
  for (let end = m - 1; end > 0; end--) {
    const t = cid(0);
    store<i32>(cand, cid(end));
    store<i32>(cand + (<usize>end << 2), t);
    siftDown(logits, 0, end);
  }
}

// min-heap by (logit, -id) so heapsort leaves the array in descending order
function siftDown(logits: usize, i: i32, n: i32): void {
  while (true) {
    const l = 2 * i + 1, r = l + 1;
    let m = i;
    if (l < n && before(logits, cid(l), cid(m))) m = l;
    if (r < n && before(logits, cid(r), cid(m))) m = r;
    if (m == i) return;
    const t = cid(i);
    store<i32>(cand + (<usize>i << 2), cid(m));
    store<i32>(cand + (<usize>m << 2), t);
    i = m;
  }
}

// @ts-ignore: decorator
@inline function before(logits: usize, a: i32, b: i32): bool {
  const va = lg(logits, a), vb = lg(logits, b);
  return va < vb || (va == vb && a > b);
}

/**
 * The k best ids with logit ≥ cut under the sort's total order (logit, then lower id), unordered,
 * in cand[0, m); returns m ≤ k. A bounded heap whose root is the worst kept id: one comparison
 * rejects most ids, so this is O(n) instead of sorting every candidate (a 248K-entry vocabulary
 * took 77 ms per token to sort). The kept set is exactly the first k of the full sort.
 */
function selectTopK(logits: usize, n: i32, cut: f32, k: i32): i32 {
  let m = 0;
  for (let i = 0; i < n; i++) {
    if (!(lg(logits, i) >= cut)) continue;
    if (m < k) {
      store<i32>(cand + (<usize>(m++) << 2), i);
      if (m == k) for (let start = (k >> 1) - 1; start >= 0; start--) siftDown(logits, start, k);
    } else if (before(logits, cid(0), i)) {
      store<i32>(cand, i);
      siftDown(logits, 0, k);
    }
  }
  return m;
}

/**
 * Samples one token id. temp ≤ 0 → greedy. topK ≤ 0 → no top-k; topP ≥ 1 → none; minP ≤ 0 → none.
 * Returns −1 when scratch cannot be allocated.
 */
export function sample(logits: usize, n: i32, temp: f32, topK: i32, topP: f32, minP: f32, rng: usize): i32 {
  if (temp <= 0) return argmax(logits, n);
  if (!reserve(n)) return -1;
  const mx = lg(logits, argmax(logits, n));
  // keep tokens that can survive min-p (p/pmax = exp((l − max)/T) ≥ minP), then top-k
  const cut: f32 = minP > 0 ? mx + temp * Mathf.log(minP) : -Infinity;
  let m = 0;
  if (topK > 0 && topK < n) {
    m = selectTopK(logits, n, cut, topK);
  } else {
    for (let i = 0; i < n; i++) if (lg(logits, i) >= cut) store<i32>(cand + (<usize>(m++) << 2), i);
  }
  sortCandidates(logits, m);
  if (topK > 0 && topK < m) m = topK;
  let sum: f64 = 0;
  for (let i = 0; i < m; i++) {
    const e = Math.exp(<f64>((lg(logits, cid(i)) - mx) / temp));
    store<f32>(prob + (<usize>i << 2), <f32>e);
    sum += e;
  }
  // top-p: smallest prefix whose mass reaches topP
  if (topP < 1) {
    let acc: f64 = 0;
    for (let i = 0; i < m; i++) {
      acc += <f64>load<f32>(prob + (<usize>i << 2)) / sum;
      if (acc >= <f64>topP) { m = i + 1; break; }
    }
    sum = 0;
    for (let i = 0; i < m; i++) sum += <f64>load<f32>(prob + (<usize>i << 2));
  }
  const r = rngNext(rng) * sum;
  let acc: f64 = 0;
  for (let i = 0; i < m; i++) {
    acc += <f64>load<f32>(prob + (<usize>i << 2));
    if (r < acc) return cid(i);
  }
  return cid(m - 1);
}
