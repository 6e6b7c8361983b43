/**
 * IQ2_XXS row quantizer (ggml-quants.c, quantize_row_iq2_xxs_impl), importance matrix required.
 * Each group of 8 magnitudes is snapped to one of 256 grid points (levels 1, 3, 5 per value; the
 * signs go to 7 bits with even parity); a point off the grid is replaced by its best neighbour
 * among the grid points at the two nearest distances. The neighbour lists are built exactly as
 * iq2xs_init_impl builds them (sorted by distance, then grid index), so ties resolve alike.
 */
import { f, importance, mad, nearestInt, sumSquares, F_0_1, GROUP_MAX_EPS } from './float32.js';
import { makeQp, putF16, QK_K } from './kquants.js';
import { IQ2XXS_GRID } from './generated/grids.js';

const KMAP_SIZE = 43692;
const NWANT = 2;

interface Grid {
  /** levels 1/3/5 of grid point k at [8k, 8k+8) */
  pos: Int8Array;
  /** 2-bit code → grid index, or −(offset+1) of its neighbour list */
  map: Int32Array;
  /** neighbour lists: count, then grid indices */
  neighbours: Uint16Array;
}

let grid: Grid | null = null;

function buildGrid(): Grid {
  const LEVEL: Record<number, number> = { 8: 0, 25: 1, 43: 2 };
  const n = IQ2XXS_GRID.length / 8;
  const pos = new Int8Array(n * 8);
  const map = new Int32Array(KMAP_SIZE).fill(-1);
  for (let k = 0; k < n; k++) {
    let index = 0;
    for (let i = 0; i < 8; i++) {
      const l = LEVEL[IQ2XXS_GRID[8 * k + i]];
      if (l === undefined) throw new Error(`IQ2_XXS grid entry ${k} has magnitude ${IQ2XXS_GRID[8 * k + i]}`);
      pos[8 * k + i] = 2 * l + 1;
      index |= l << (2 * i);
    }
    map[index] = k;
  }
  const lists: number[] = [];
  // squared distances are small integers (≤ 8 · 6²): a counting sort by distance, grid index
  // ascending within a distance, is the (distance, index) order of ggml's qsort
  const MAXD = 8 * 36;
  const d2 = new Int32Array(n), order = new Int32Array(n), counts = new Int32Array(MAXD + 2);
  const p = new Int8Array(8);
  for (let u = 0; u < KMAP_SIZE; u++) {
    if (map[u] >= 0) continue;
    for (let k = 0; k < 8; k++) p[k] = 2 * ((u >> (2 * k)) & 3) + 1;
    counts.fill(0);
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let k = 0; k < 8; k++) { const e = pos[8 * j + k] - p[k]; s += e * e; }
      d2[j] = s;
      counts[s + 1]++;
    }
    for (let d = 1; d <= MAXD + 1; d++) counts[d] += counts[d - 1];
    for (let j = 0; j < n; j++) order[counts[d2[j]]++] = j;
    map[u] = -(lists.length + 1);
    const start = lists.length;
    lists.push(0);
    let have = 1, cur = d2[order[0]], count = 0;
    for (const j of order) {
      if (d2[j] > cur) {
        if (have === NWANT) break;
        cur = d2[j];
        have++;
      }
      lists.push(j);
      count++;
    }
    lists[start] = count;
  }
  return { pos, map, neighbours: Uint16Array.from(lists) };
}

function theGrid(): Grid {
  return (grid ??= buildGrid());
}

/** iq2_find_best_neighbour: the listed point nearest to x/scale in the weighted metric. */
function bestNeighbour(g: Grid, list: number, x: Float32Array, xo: number, w: Float32Array, wo: number, scale: number,
  L: Int8Array, lo: number): number {
  const n = g.neighbours[list];
  let best = Number.MAX_VALUE, index = -1;
  for (let j = 1; j <= n; j++) {
    const k = g.neighbours[list + j];
    let d2 = 0;
    for (let i = 0; i < 8; i++) {
      const diff = mad(scale, g.pos[8 * k + i], -x[xo + i]);
      d2 = mad(f(w[wo + i] * diff), diff, d2);
    }
    if (d2 < best) { best = d2; index = k; }
  }
  if (index < 0) throw new Error('IQ2_XXS: no neighbour found (grid tables corrupted)');
  for (let i = 0; i < 8; i++) L[lo + i] = (g.pos[8 * index + i] - 1) / 2;
  return index;
}

/** One row of IQ2_XXS (66 bytes per 256: d, then 8 × (4 grid indices | 4×7 sign bits + 4-bit scale)). */
export function quantizeIQ2XXS(x: Float32Array, out: Uint8Array, qw: Float32Array): void {
  const g = theGrid();
  const kMaxQ = 3;
  const nbl = x.length / QK_K;
  const scales = new Float32Array(8), weight = new Float32Array(32), xval = new Float32Array(32), waux = new Float32Array(32);
  const L = new Int8Array(32), Laux = new Int8Array(32);
  const Lbytes = new Uint8Array(L.buffer); // make_qp_quants writes L as uint8_t
  const signs = new Uint8Array(4);
  const q2 = new Uint32Array(16);
  const code = (A: Int8Array, at: number) => {
    let u = 0;
    for (let i = 0; i < 8; i++) u |= A[at + i] << (2 * i);
    return u;
  };
  for (let ibl = 0; ibl < nbl; ibl++) {
    const o = ibl * 66, xbl = ibl * QK_K;
    q2.fill(0);
    let maxScale = 0;
    const sigma2 = f(sumSquares(x, xbl, QK_K) / QK_K);
    for (let ib = 0; ib < 8; ib++) {
      const xb = xbl + 32 * ib;
      for (let i = 0; i < 32; i++) weight[i] = importance(qw[xb + i], sigma2, x[xb + i]);
      for (let i = 0; i < 32; i++) waux[i] = f(Math.sqrt(weight[i]));
      for (let k = 0; k < 4; k++) {
        let nflip = 0, s = 0;
        for (let i = 0; i < 8; i++) {
          const v = x[xb + 8 * k + i];
          if (v >= 0) xval[8 * k + i] = v;
          else { xval[8 * k + i] = -v; nflip++; s |= 1 << i; }
        }
        if (nflip % 2) {
          let imin = 0;
          let min = f(f(weight[8 * k] * x[xb + 8 * k]) * x[xb + 8 * k]);
          for (let i = 1; i < 8; i++) {
            const v = x[xb + 8 * k + i];
            const ax = f(f(weight[8 * k + i] * v) * v);
            if (ax < min) { min = ax; imin = i; }
          }
          xval[8 * k + imin] = -xval[8 * k + imin];
          s ^= 1 << imin;
        }
        signs[k] = s & 127;
      }
      let max = xval[0];
      for (let i = 1; i < 32; i++) max = Math.max(max, xval[i]);
      if (max < GROUP_MAX_EPS) {
        scales[ib] = 0;
        L.fill(0);
        continue;
      }
      let scale = makeQp(32, kMaxQ + 1, xval, 0, Lbytes, 0, weight, 0);
      const effMax = f(scale * kMaxQ);
      let best = 0;
      for (let is = -6; is <= 6; is++) {
        const id = f(mad(is, F_0_1, 2 * kMaxQ - 1) / effMax);
        const thisScale = f(1 / id);
        for (let k = 0; k < 4; k++) {
          for (let i = 0; i < 8; i++) {
            const l = nearestInt(f(0.5 * mad(id, xval[8 * k + i], -1)));
            Laux[8 * k + i] = Math.max(0, Math.min(kMaxQ - 1, l));
          }
          const m = g.map[code(Laux, 8 * k)];
          if (m < 0) bestNeighbour(g, -m - 1, xval, 8 * k, waux, 8 * k, thisScale, Laux, 8 * k);
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 32; i++) {
          const w = weight[i], q = 2 * Laux[i] + 1;
          sumqx = mad(f(w * xval[i]), q, sumqx);
          sumq2 = mad(f(w * q), q, sumq2);
        }
        if (sumq2 > 0 && f(sumqx * sumqx) > f(best * sumq2)) {
          scale = f(sumqx / sumq2);
          best = f(scale * sumqx);
          L.set(Laux);
        }
      }
      if (scale > 0) {
        const id = f(1 / scale);
        for (let k = 0; k < 4; k++) {
          let u = 0;
          for (let i = 0; i < 8; i++) {
            const l = Math.max(0, Math.min(kMaxQ - 1, nearestInt(f(0.5 * mad(id, xval[8 * k + i], -1)))));
            u |= l << (2 * i);
          }
          let index = g.map[u];
          if (index < 0) index = bestNeighbour(g, -index - 1, xval, 8 * k, waux, 8 * k, scale, L, 8 * k);
          for (let i = 0; i < 8; i++) L[8 * k + i] = (g.pos[8 * index + i] - 1) / 2;
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 32; i++) {
          const w = weight[i], q = 2 * L[i] + 1;
          sumqx = mad(f(w * xval[i]), q, sumqx);
          sumq2 = mad(f(w * q), q, sumq2);
        }
        if (sumq2 > 0) scale = f(sumqx / sumq2);
      }
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) signs[k] = ~signs[k] & 127;
      }
      for (let k = 0; k < 4; k++) {
        const index = g.map[code(L, 8 * k)];
        if (index < 0) throw new Error(`IQ2_XXS: point ${code(L, 8 * k)} is not on the grid`);
        q2[2 * ib] |= index << (8 * k);
        q2[2 * ib + 1] |= signs[k] << (7 * k);
      }
      scales[ib] = scale;
      maxScale = Math.max(maxScale, scale);
    }
    out.fill(0, o, o + 66);
    if (!maxScale) continue;
    const d = f(maxScale / 31);
    putF16(out, o, d);
    const id = f(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      const l = Math.max(0, Math.min(15, nearestInt(f(0.5 * mad(id, scales[ib], -1)))));
      q2[2 * ib + 1] |= l << 28;
    }
    const dv = new DataView(out.buffer, out.byteOffset + o + 2, 64);
    for (let j = 0; j < 16; j++) dv.setUint32(4 * j, q2[j], true);
  }
}
