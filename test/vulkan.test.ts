/**
 * Vulkan backend on the available device (lavapipe in CI): shader parity with the WASM reference,
 * end-to-end parity with the oracles, prefill vs decode, cross-backend payloads.
 * Set Q36_VK_FULL=1 to run every case and longer prefills (GPU machine).
 */
import * as fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ALL_TYPES, GgmlType, rowBytes, typeName } from '../ts/gguf/index.js';
import { MATVEC } from '../ts/engine/vulkan/weights.js';
import { QuantKernels } from '../ts/core/quant.js';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { MM_MIN_ROWS, MM_MOE_PAIRS, OpList, Pipelines, gridBlob, matvecOp, moeMaxTiles, mvqLanes } from '../ts/engine/vulkan/graph.js';
import { KERNELS, dispatch } from '../ts/engine/vulkan/kernels.js';
import { Core } from '../ts/core/wasm.js';
import { loadAddon } from '../ts/vk/addon.js';
import { Rng } from '../ts/model/synth.js';
import { fixture, oracleLogitErrors } from './helpers.js';
import { readQuantOracle } from '../scripts/lib/quant-oracle.js';
import { prefillVsDecode } from '../scripts/check/prefill-check.js';

const FULL = process.env.Q36_VK_FULL === '1';
const q = new QuantKernels();

function oracleRow(t: number, n: number, rng: Rng): Uint8Array {
  const o = readQuantOracle(fixture('quant', `${typeName(t).toLowerCase()}.bin`));
  const out = new Uint8Array((n / o.elems) * o.bytes);
  for (let i = 0; i < n / o.elems; i++) out.set(o.block(rng.int(0, o.nBlocks - 1)), i * o.bytes);
  return out;
}

describe('matvec shaders vs the WASM reference (random blocks of every Vulkan type)', () => {
  const dev = new (loadAddon().Device)(-1);
  const pipes = new Pipelines(dev);
  const gridBytes = gridBlob(new Core());
  const grid = dev.createBuffer(gridBytes.byteLength, false);
  dev.write(grid, 0, gridBytes);
  const types: [number, string][] = Object.entries(MATVEC).map(([t, name]) => [Number(t), name]);
  it('every type the CPU computes with has a Vulkan decoder', () => expect(types.length).toBe(ALL_TYPES.filter((t) => t.supported).length));
  // nx = 1 runs the matvec shader, nx = 2 and 3 matmul2 and matmul4 (batched decode steps; 3
  // leaves a row of the 4 empty), nx = 6 matmul4 twice for Q8_0 (SPLIT8_TYPES) and matmul for the
  // others, nx = 11 the matmul shader (a full and a partial tile of 8);
  // 5 rows leave the last 4-row workgroup partly empty; nx = 70 the tiled mm shader over 70 rows
  // (a full and a partial tile of 64 both ways)
  it.each(types.flatMap(([t, name]) => [[t, name, 1], [t, name, 2], [t, name, 3], [t, name, 6], [t, name, 11], [t, name, 70]] as [number, string, number][]))('type %i (%s), %i activation rows', (t, name, nx) => {
    const rng = new Rng(t + 7);
    const rows = nx >= MM_MIN_ROWS ? 70 : 5, n = 512;
    const rb = rowBytes(t, n);
    const w = new Uint8Array(rows * rb);
    for (let r = 0; r < rows; r++) w.set(oracleRow(t, n, rng), r * rb);
    // scalar types from the oracle hold any finite value: keep them moderate
    if (t === GgmlType.F32) { const f = new Float32Array(w.buffer); for (let i = 0; i < f.length; i++) f[i] = rng.normal(); }
    if (t === GgmlType.F16 || t === GgmlType.BF16) { const h = new Uint16Array(w.buffer); for (let i = 0; i < h.length; i++) h[i] = t === GgmlType.F16 ? 0x3000 + rng.int(0, 0x1fff) : 0x3e00 + rng.int(0, 0x1ff); }
    const x = new Float32Array(n * nx).map(() => rng.normal());
    const ref = q.matmul(t, w, rows, n, x);
    const wb = dev.createBuffer(w.byteLength, false), xb = dev.createBuffer(x.byteLength, false), yb = dev.createBuffer(rows * nx * 4, true), ib = dev.createBuffer(16, false);
    dev.write(wb, 0, w);
    dev.write(xb, 0, new Uint8Array(x.buffer));
    const ops = new OpList(pipes);
    matvecOp(ops, { type: name, buffers: [wb, xb, yb, ib, grid], rows, n, rowBytes: rb, nRows: nx });
    const cmd = dev.record(ops.build(), true);
    dev.runSync(cmd);
    const ns = dev.timings(cmd); // profiled command: one GPU duration per dispatch
    expect(ns.length).toBe(1);
    expect(ns[0]).toBeGreaterThanOrEqual(0);
    const y = new Float32Array(dev.read(yb, 0, rows * nx * 4));
    // differences in units of the outputs' RMS: rounding (different summation orders) is ~1e-6
    // of it; one wrongly decoded value of a 512-long row moves an output by ~1/√512 ≈ 4e-2
    const rms = Math.sqrt(ref.reduce((a, v) => a + v * v, 0) / ref.length);
    let worst = 0;
    for (let i = 0; i < y.length; i++) worst = Math.max(worst, Math.abs(y[i] - ref[i]) / rms);
    expect(worst, `${name}: worst difference / RMS`).toBeLessThan(1e-4);
    dev.freeCommand(cmd);
    [wb, xb, yb, ib].forEach((b) => dev.freeBuffer(b));
  });

  // mv.comp (32-weight units) for every type: rows of 512 values (16 threads a row, 4 rows side
  // by side) and 4096 (64 threads, 2 units each), 1, 2, 4 or 8 rows per thread (a partial last
  // workgroup); each row's sum must not depend on the rows per thread (batched = alone)
  it.each(types.flatMap(([t, name]) => [[t, name, 512], [t, name, 4096]] as [number, string, number][]))('mv: type %i (%s), rows of %i', (t, name, n) => {
    const rng = new Rng(t + 17);
    const rows = 37, rb = rowBytes(t, n);
    const w = new Uint8Array(rows * rb);
    for (let r = 0; r < rows; r++) w.set(oracleRow(t, n, rng), r * rb);
    if (t === GgmlType.F32) { const f = new Float32Array(w.buffer); for (let i = 0; i < f.length; i++) f[i] = rng.normal(); }
    if (t === GgmlType.F16 || t === GgmlType.BF16) { const h = new Uint16Array(w.buffer); for (let i = 0; i < h.length; i++) h[i] = t === GgmlType.F16 ? 0x3000 + rng.int(0, 0x1fff) : 0x3e00 + rng.int(0, 0x1ff); }
    const x = new Float32Array(n).map(() => rng.normal());
    const ref = q.matmul(t, w, rows, n, x);
    const wb = dev.createBuffer(w.byteLength, false), xb = dev.createBuffer(x.byteLength, false), ib = dev.createBuffer(16, false);
    const ys = [1, 2, 4, 8].map(() => dev.createBuffer(rows * 4, true));
    dev.write(wb, 0, w);
    dev.write(xb, 0, new Uint8Array(x.buffer));
    const ops = new OpList(pipes);
    ([1, 2, 4, 8] as const).forEach((R, i) => matvecOp(ops, { type: name, buffers: [wb, xb, ys[i], ib, grid], rows, n, rowBytes: rb, nRows: 1, unit: true, fixedRows: R }));
    expect(ops.names.every((s) => s === `mv_${name}`)).toBe(true);
    const cmd = dev.record(ops.build());
    dev.runSync(cmd);
    const got = ys.map((b) => new Float32Array(dev.read(b, 0, rows * 4)));
    const rms = Math.sqrt(ref.reduce((a, v) => a + v * v, 0) / ref.length);
    let worst = 0;
    for (let i = 0; i < rows; i++) worst = Math.max(worst, Math.abs(got[0][i] - ref[i]) / rms);
    expect(worst, `${name}: worst difference / RMS`).toBeLessThan(1e-4);
    expect(Array.from(got[1]), 'R = 2 vs 1').toEqual(Array.from(got[0]));
    expect(Array.from(got[2]), 'R = 4 vs 1').toEqual(Array.from(got[0]));
    expect(Array.from(got[3]), 'R = 8 vs 1').toEqual(Array.from(got[0]));
    dev.freeCommand(cmd);
    [wb, xb, ib, ...ys].forEach((b) => dev.freeBuffer(b));
  });

  // the decoders' word loads (decode.glsl): Q8_0, IQ2_XXS and Q6_K blocks at any 2-byte
  // alignment (rows starting 2 bytes into a word, the last block ending the buffer); the types
  // read with plain word loads refuse a weight that is not 4-byte aligned
  it.each([[GgmlType.Q8_0, 'q8_0'], [GgmlType.IQ2_XXS, 'iq2_xxs'], [GgmlType.Q6_K, 'q6_k']] as [number, string][])('%i (%s) rows at an offset of 2 bytes into a word', (t, name) => {
    const rng = new Rng(t + 101);
    const rows = 3, n = 256, rb = rowBytes(t, n);
    const w = new Uint8Array(2 + rows * rb);
    for (let r = 0; r < rows; r++) w.set(oracleRow(t, n, rng), 2 + r * rb);
    const x = new Float32Array(n).map(() => rng.normal());
    const ref = q.matmul(t, w.slice(2), rows, n, x);
    // the buffer holds exactly the rows after the 2-byte offset (rounded up to a word)
    const wb = dev.createBuffer(Math.ceil(w.byteLength / 4) * 4, false), xb = dev.createBuffer(x.byteLength, false), yb = dev.createBuffer(rows * 4, true), ib = dev.createBuffer(16, false);
    dev.write(wb, 0, w);
    dev.write(xb, 0, new Uint8Array(x.buffer));
    const ops = new OpList(pipes);
    matvecOp(ops, { type: name, buffers: [wb, xb, yb, ib, grid], rows, n, rowBytes: rb, nRows: 1, wOffset: 2, minGroups: 0 });
    const cmd = dev.record(ops.build());
    dev.runSync(cmd);
    const y = new Float32Array(dev.read(yb, 0, rows * 4));
    const rms = Math.sqrt(ref.reduce((a, v) => a + v * v, 0) / ref.length);
    for (let i = 0; i < rows; i++) expect(Math.abs(y[i] - ref[i]) / rms, `${name} row ${i}`).toBeLessThan(1e-4);
    dev.freeCommand(cmd);
    [wb, xb, yb, ib].forEach((b) => dev.freeBuffer(b));
  });
  it.each(['q2_k', 'q4_k', 'q5_k'])('%s: a weight offset that breaks 4-byte alignment is refused', (name) => {
    const ops = new OpList(pipes);
    expect(() => matvecOp(ops, { type: name, buffers: [grid, grid, grid, grid, grid], rows: 1, n: 256, rowBytes: 84, nRows: 1, wOffset: 2 })).toThrow(/multiples of 4 bytes/);
  });

  it('argmax: first maximum on ties, NaN flagged, offset row; a grammar mask leaves the disallowed out', () => {
    const n = 70001, rng = new Rng(5);
    const rows = new Float32Array(2 * n).map(() => rng.normal());
    const groups = Math.ceil(n / 1024), words = Math.ceil(n / 32);
    const b = dev.createBuffer(rows.byteLength, false), arg = dev.createBuffer(8, true);
    const part = dev.createBuffer(8 * groups, false), flags = dev.createBuffer(4 * groups, false);
    const maskBuf = dev.createBuffer(4 * (1 + words), true);
    let mask: Uint32Array | undefined;
    const run = () => {
      dev.write(b, 0, new Uint8Array(rows.buffer));
      const m = new Uint32Array(1 + words);
      if (mask) { m[0] = 1; m.set(mask, 1); }
      dev.write(maskBuf, 0, new Uint8Array(m.buffer));
      const ops = new OpList(pipes), bind = { LOGITS: b, TKA: part, TKB: flags, ARG: arg, MASK: maskBuf };
      dispatch(ops, KERNELS.argmax, bind, { n, offset: n, stage: 0, groups }, [groups]);
      dispatch(ops, KERNELS.argmax, bind, { n, offset: 0, stage: 1, groups }, [1]);
      const cmd = dev.record(ops.build(), false);
      dev.runSync(cmd);
      dev.freeCommand(cmd);
      return Array.from(new Uint32Array(dev.read(arg, 0, 8)));
    };
    const hostArgmax = (ok = (_i: number) => true) => { let bi = -1; for (let i = 0; i < n; i++) if (ok(i) && (bi < 0 || rows[n + i] > rows[n + bi])) bi = i; return bi; };
    expect(run()).toEqual([hostArgmax(), 0]);
    // a mask: every third token allowed, the maximum not; then one token; then none
    const top = hostArgmax();
    const allowed = (i: number) => i % 3 === 1 && i !== top;
    mask = new Uint32Array(words);
    for (let i = 0; i < n; i++) if (allowed(i)) mask[i >>> 5] |= 1 << (i & 31);
    expect(run()).toEqual([hostArgmax(allowed), 0]);
    mask = new Uint32Array(words);
    mask[69999 >>> 5] |= 1 << (69999 & 31);
    expect(run()).toEqual([69999, 0]);
    mask = new Uint32Array(words);
    expect(run()).toEqual([0xffffffff, 0]);
    mask = undefined;
    // the same maximum at three places in the second row: the lowest index wins
    for (const i of [60000, 123, 4567]) rows[n + i] = 99;
    expect(run()).toEqual([123, 0]);
    rows[n + 7] = NaN;
    expect(run()[1]).toBe(1);
    // every value −∞: no index (the host decides)
    rows.fill(-Infinity, n);
    expect(run()).toEqual([0xffffffff, 0]);
    rows[n + n - 1] = -1e30;
    expect(run()).toEqual([n - 1, 0]);
    [b, arg, part, flags, maskBuf].forEach((x) => dev.freeBuffer(x));
  });

  it.each([false, true])('routed-expert gather (flags 1 and 3) picks the expert of each row (mv.comp: %s)', (unit) => {
    const t = GgmlType.Q2_K, rng = new Rng(99);
    const nExp = 3, rows = 6, n = 512, K = 2, T = 2, rb = rowBytes(t, n);
    const w = new Uint8Array(nExp * rows * rb);
    for (let r = 0; r < nExp * rows; r++) w.set(oracleRow(t, n, rng), r * rb);
    const x = new Float32Array(T * K * n).map(() => rng.normal());
    const ids = Uint32Array.of(2, 0, 1, 2);
    const wb = dev.createBuffer(w.byteLength, false), xb = dev.createBuffer(x.byteLength, false), ib = dev.createBuffer(16, false);
    const y1 = dev.createBuffer(T * K * rows * 4, true), y3 = dev.createBuffer(T * K * rows * 4, true);
    dev.write(wb, 0, w); dev.write(xb, 0, new Uint8Array(x.buffer)); dev.write(ib, 0, new Uint8Array(ids.buffer));
    const ops = new OpList(pipes);
    const base = { type: 'q2_k', rows, n, rowBytes: rb, nRows: T * K, K, expertBytes: rows * rb, unit };
    matvecOp(ops, { ...base, buffers: [wb, xb, y1, ib, grid], flags: 1 }); // X row = token (j / K)
    matvecOp(ops, { ...base, buffers: [wb, xb, y3, ib, grid], flags: 3 }); // X row = j
    expect(ops.names[0]).toMatch(unit ? /^mv_q2_k$/ : /^matvec[12]?_q2_k$/);
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const got1 = new Float32Array(dev.read(y1, 0, T * K * rows * 4)), got3 = new Float32Array(dev.read(y3, 0, T * K * rows * 4));
    for (let j = 0; j < T * K; j++) {
      const we = w.subarray(ids[j] * rows * rb, (ids[j] + 1) * rows * rb);
      const r1 = q.matmul(t, we, rows, n, x.subarray(Math.floor(j / K) * n, (Math.floor(j / K) + 1) * n));
      const r3 = q.matmul(t, we, rows, n, x.subarray(j * n, (j + 1) * n));
      for (let r = 0; r < rows; r++) {
        expect(Math.abs(got1[j * rows + r] - r1[r])).toBeLessThan(1e-3 * (Math.abs(r1[r]) + 1));
        expect(Math.abs(got3[j * rows + r] - r3[r])).toBeLessThan(1e-3 * (Math.abs(r3[r]) + 1));
      }
    }
    dev.freeCommand(cmd);
    [wb, xb, ib, y1, y3].forEach((b) => dev.freeBuffer(b));
  });

  // mv.comp's GLU (R/2 gate rows and their up rows a thread) over routed-expert pairs: 2, 4 or 8
  // rows a thread, the same bits every way
  it('mv GLU over expert pairs = silu(gate·x)·(up·x), 2, 4 and 8 rows a thread', () => {
    const t = GgmlType.Q2_K, rng = new Rng(47), nExp = 3, rows = 5, n = 512, K = 2, rb = rowBytes(t, n);
    // expert e: [gate rows; up rows]
    const w = new Uint8Array(nExp * 2 * rows * rb);
    for (let r = 0; r < nExp * 2 * rows; r++) w.set(oracleRow(t, n, rng), r * rb);
    const x = new Float32Array(2 * n).map(() => rng.normal());
    const ids = Uint32Array.of(2, 0, 1, 2);
    const wb = dev.createBuffer(w.byteLength, false), xb = dev.createBuffer(x.byteLength, false), ib = dev.createBuffer(16, false);
    const ys = [2, 4, 8].map(() => dev.createBuffer(4 * rows * 4, true));
    dev.write(wb, 0, w); dev.write(xb, 0, new Uint8Array(x.buffer)); dev.write(ib, 0, new Uint8Array(ids.buffer));
    const ops = new OpList(pipes);
    ([2, 4, 8] as const).forEach((R, i) => matvecOp(ops, { type: 'q2_k', buffers: [wb, xb, ys[i], ib, grid], rows, n, rowBytes: rb, nRows: 4, K, flags: 1 | 4, expertBytes: 2 * rows * rb, upBytes: rows * rb, fixedRows: R, unit: true }));
    expect(ops.names).toEqual(['mv_q2_k', 'mv_q2_k', 'mv_q2_k']);
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const got = ys.map((b) => new Float32Array(dev.read(b, 0, 4 * rows * 4)));
    for (let j = 0; j < 4; j++) {
      const e = w.subarray(ids[j] * 2 * rows * rb), xr = x.subarray(Math.floor(j / K) * n, (Math.floor(j / K) + 1) * n);
      const g = q.matmul(t, e.subarray(0, rows * rb), rows, n, xr), u = q.matmul(t, e.subarray(rows * rb, 2 * rows * rb), rows, n, xr);
      for (let r = 0; r < rows; r++) { const want = (g[r] / (1 + Math.exp(-g[r]))) * u[r]; expect(Math.abs(got[0][j * rows + r] - want)).toBeLessThan(1e-4 * (Math.abs(want) + 1)); }
    }
    expect(Array.from(got[1])).toEqual(Array.from(got[0]));
    expect(Array.from(got[2])).toEqual(Array.from(got[0]));
    dev.freeCommand(cmd);
    [wb, xb, ib, ...ys].forEach((b) => dev.freeBuffer(b));
  });

  // the int8 levels' contract (levels.glsl): levels in [-127, 127], s0 = amax/127 of the 32 values,
  // s1 = s0/254, s2 = s1/254, and Σ s_k·a_k within amax·2^-22 of each value
  function checkLevels(a: Float32Array, lv: Int8Array, sc: Float32Array, rows: number, n: number): void {
    const nu = n / 32;
    for (let r = 0; r < rows; r++) for (let u = 0; u < nu; u++) {
      let amax = 0;
      for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(a[r * n + 32 * u + i]));
      const s = sc.subarray((r * nu + u) * 4, (r * nu + u) * 4 + 3);
      expect(Math.abs(s[0] - amax / 127)).toBeLessThanOrEqual(1e-6 * amax);
      expect(Math.abs(s[1] - s[0] / 254)).toBeLessThanOrEqual(1e-6 * s[0]);
      expect(Math.abs(s[2] - s[1] / 254)).toBeLessThanOrEqual(1e-6 * s[1]);
      for (let i = 0; i < 32; i++) {
        let v = 0;
        for (let k = 0; k < 3; k++) {
          const b = lv[(((r * 3 + k) * 2 + (i >> 4)) * nu + u) * 16 + (i & 15)];
          expect(b).toBeGreaterThanOrEqual(-127);
          v += s[k] * b;
        }
        expect(Math.abs(v - a[r * n + 32 * u + i])).toBeLessThanOrEqual(amax * 2 ** -22);
      }
    }
  }

  it.each([96, 512])('quant.comp: rows of %i values as int8 levels', (n) => {
    const rows = 3, rng = new Rng(59), x = new Float32Array(rows * n).map(() => rng.normal() * 0.1);
    x.fill(0, n, n + 32); // an all-zero unit: zero scales and levels
    const xb = dev.createBuffer(x.byteLength, false), xq = dev.createBuffer(rows * 3 * n, true), xs = dev.createBuffer(rows * n / 2, true);
    dev.write(xb, 0, new Uint8Array(x.buffer));
    const ops = new OpList(pipes);
    dispatch(ops, KERNELS.quant, { X: xb, XQ: xq, XS: xs }, { n }, [Math.ceil(n / 256), rows]);
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    checkLevels(x, new Int8Array(dev.read(xq, 0, rows * 3 * n)), new Float32Array(dev.read(xs, 0, rows * n / 2)), rows, n);
    dev.freeCommand(cmd);
    [xb, xq, xs].forEach((b) => dev.freeBuffer(b));
  });

  // mvq.comp: the FFN norm's rows as int8 levels (rmsnorm quant) against routed gate+up pairs
  // (GLU, gather) and plain rows, within f32 rounding of the WASM reference over the same normed
  // rows; n = 64 takes 2 threads a row (32 sets of rows a workgroup), 512 16 (4 sets), 2048 32 (plain
  // rows) or 64 (routed pairs); the routed pairs in 256-thread workgroups (mvqw, the engine's form)
  // bit-identical to 64-thread ones (mvq); 6 plain activation rows (mvq4: two workgroup rows, the
  // second partly empty) and 2 (mvq2) bit-identical to each row alone at the same lanes a row
  it.each([['q8_0', GgmlType.Q8_0, 64], ...[['iq2_xxs', GgmlType.IQ2_XXS], ['q8_0', GgmlType.Q8_0], ['q2_k', GgmlType.Q2_K]].flatMap(([name, t]) => [512, 2048].map((n) => [name, t, n]))] as [string, number, number][])('mvq (%s, type %i, n = %i) over rmsnorm levels = the f32 products', (name, t, n) => {
    expect(dev.info().integerDot).toBe(true);
    const rng = new Rng(53 + n), nExp = 3, rows = 6, K = 2, T = 6, rb = rowBytes(t, n);
    const w = new Uint8Array(nExp * 2 * rows * rb);
    for (let r = 0; r < nExp * 2 * rows; r++) w.set(oracleRow(t, n, rng), r * rb);
    const x0 = new Float32Array(T * n).map(() => rng.normal() * 3), nw = new Float32Array(n).map(() => 1 + rng.normal() * 0.1);
    const ids = Uint32Array.of(2, 0, 1, 2);
    const buf = (a: ArrayBufferView | number, host = false) => { const b = dev.createBuffer(typeof a === 'number' ? a : a.byteLength, host); if (typeof a !== 'number') dev.write(b, 0, new Uint8Array(a.buffer, a.byteOffset, a.byteLength)); return b; };
    const wb = buf(w), xb = buf(x0), ab = buf(T * n * 4, true), nb = buf(nw), ib = buf(ids), iz = buf(new Uint32Array(T)), xq = buf(T * 3 * n, true), xs = buf(T * (n / 32) * 16, true);
    const yg = buf(4 * rows * 4, true), yg64 = buf(4 * rows * 4, true), yp = buf(T * rows * 4, true), y6 = buf(T * rows * 4, true), y2 = buf(2 * rows * 4, true), zero = buf(T * K * n * 4);
    const ops = new OpList(pipes);
    dispatch(ops, KERNELS.rmsnorm, { X: xb, A: ab, weight: nb, R: zero, DE: zero, WTS: zero, DS: zero, SG: zero, XQ: xq, XS: xs }, { n, row0: 0, eps: 1e-6, mode: 0, K: 1, quant: 1 }, [T]);
    const levels = { q: xq, s: xs };
    matvecOp(ops, { type: name, buffers: [wb, ab, yg, ib, grid], rows, n, rowBytes: rb, nRows: 4, K, flags: 1 | 4, expertBytes: 2 * rows * rb, upBytes: rows * rb, levels });
    matvecOp(ops, { type: name, buffers: [wb, ab, yg64, ib, grid], rows, n, rowBytes: rb, nRows: 4, K, flags: 1 | 4, expertBytes: 2 * rows * rb, upBytes: rows * rb, levels, mvqWide: false });
    // each row alone: the one-row kernel a workgroup row each (the gather form over expert 0, at
    // the plain rows' lanes)
    matvecOp(ops, { type: name, buffers: [wb, ab, yp, iz, grid], rows, n, rowBytes: rb, nRows: T, levels, flags: 1 | 2, K: 1, expertBytes: 0, mvqLanes: mvqLanes(false) });
    matvecOp(ops, { type: name, buffers: [wb, ab, y6, iz, grid], rows, n, rowBytes: rb, nRows: T, levels });
    matvecOp(ops, { type: name, buffers: [wb, ab, y2, iz, grid], rows, n, rowBytes: rb, nRows: 2, levels });
    expect(ops.names).toEqual(['rmsnorm', `mvqw_${name}`, `mvq_${name}`, `mvqw_${name}`, `mvq4_${name}`, `mvq2_${name}`]);
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const a = new Float32Array(dev.read(ab, 0, T * n * 4));
    checkLevels(a, new Int8Array(dev.read(xq, 0, T * 3 * n)), new Float32Array(dev.read(xs, 0, T * (n / 32) * 16)), T, n);
    const g4 = new Float32Array(dev.read(yg, 0, 4 * rows * 4)), p1 = new Float32Array(dev.read(yp, 0, T * rows * 4));
    expect(Array.from(new Float32Array(dev.read(yg64, 0, 4 * rows * 4)))).toEqual(Array.from(g4));
    expect(Array.from(new Float32Array(dev.read(y6, 0, T * rows * 4)))).toEqual(Array.from(p1));
    expect(Array.from(new Float32Array(dev.read(y2, 0, 2 * rows * 4)))).toEqual(Array.from(p1.subarray(0, 2 * rows)));
    for (let j = 0; j < 4; j++) {
      const e = w.subarray(ids[j] * 2 * rows * rb), xr = a.subarray(Math.floor(j / K) * n, (Math.floor(j / K) + 1) * n);
      const g = q.matmul(t, e.subarray(0, rows * rb), rows, n, xr), u = q.matmul(t, e.subarray(rows * rb, 2 * rows * rb), rows, n, xr);
      for (let r = 0; r < rows; r++) { const want = (g[r] / (1 + Math.exp(-g[r]))) * u[r]; expect(Math.abs(g4[j * rows + r] - want)).toBeLessThan(1e-4 * (Math.abs(want) + 1)); }
    }
    const plain = q.matmul(t, w.subarray(0, rows * rb), rows, n, a);
    for (let i = 0; i < T * rows; i++) expect(Math.abs(p1[i] - plain[i])).toBeLessThan(1e-4 * (Math.abs(plain[i]) + 1));
    dev.freeCommand(cmd);
    [wb, xb, ab, nb, ib, iz, xq, xs, yg, yg64, yp, y6, y2, zero].forEach((b) => dev.freeBuffer(b));
  });

  // decode's fused SwiGLU (gate row, up row upBytes later): 2 rows per workgroup on a GPU
  // (matvec2: one gate and its up row), 4 on a CPU device (minGroups 0)
  it.each([[undefined, 'matvec2'], [0, 'matvec']] as const)('decode GLU matvec (minGroups %s: %s) = silu(gate·x)·(up·x)', (minGroups, shader) => {
    const t = GgmlType.Q8_0, rng = new Rng(41), rows = 6, n = 256, rb = rowBytes(t, n);
    const w = new Uint8Array(2 * rows * rb);
    for (let r = 0; r < 2 * rows; r++) w.set(oracleRow(t, n, rng), r * rb);
    const x = new Float32Array(n).map(() => rng.normal());
    const g = q.matmul(t, w.subarray(0, rows * rb), rows, n, x), u = q.matmul(t, w.subarray(rows * rb), rows, n, x);
    const wb = dev.createBuffer(w.byteLength, false), xb = dev.createBuffer(x.byteLength, false), yb = dev.createBuffer(rows * 4, true), ib = dev.createBuffer(16, false);
    dev.write(wb, 0, w); dev.write(xb, 0, new Uint8Array(x.buffer));
    const ops = new OpList(pipes);
    matvecOp(ops, { type: 'q8_0', buffers: [wb, xb, yb, ib, grid], rows, n, rowBytes: rb, nRows: 1, flags: 4, upBytes: rows * rb, minGroups });
    expect(ops.names[0]).toBe(`${shader}_q8_0`);
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const y = new Float32Array(dev.read(yb, 0, rows * 4));
    for (let r = 0; r < rows; r++) { const want = (g[r] / (1 + Math.exp(-g[r]))) * u[r]; expect(Math.abs(y[r] - want)).toBeLessThan(1e-4 * (Math.abs(want) + 1)); }
    dev.freeCommand(cmd);
    [wb, xb, yb, ib].forEach((b) => dev.freeBuffer(b));
  });

  // decode's router matvec whose last workgroup routes the token: 1 row per workgroup on a GPU
  // (matvec_router1), 4 on a CPU device; and a batched step's 3 rows in one dispatch, each routed
  // by its own last workgroup (a counter word per row); logits, ids and renormalised weights of
  // every row against plain math
  it.each([[undefined, 'matvec_router1', 1], [0, 'matvec_router', 1], [undefined, 'matvec_router1', 3], [0, 'matvec_router', 3]] as const)('router matvec with routing epilogue (minGroups %s: %s, %i rows)', (minGroups, shader, T) => {
    const rng = new Rng(43 + T), nExp = 40, K = 4, n = 128;
    const w = new Float32Array(nExp * n).map(() => rng.normal()), x = new Float32Array(T * n).map(() => rng.normal());
    const wb = dev.createBuffer(w.byteLength, false), xb = dev.createBuffer(x.byteLength, false), yb = dev.createBuffer(T * nExp * 4, true);
    const ib = dev.createBuffer(T * K * 4, true), wtb = dev.createBuffer(T * K * 4, true), cnt = dev.createBuffer(T * 4, false);
    dev.write(wb, 0, new Uint8Array(w.buffer)); dev.write(xb, 0, new Uint8Array(x.buffer)); dev.write(cnt, 0, new Uint8Array(T * 4));
    const ops = new OpList(pipes);
    const d = { type: 'f32', buffers: [wb, xb, yb, ib, grid] as [number, number, number, number, number], rows: nExp, n, rowBytes: n * 4, nRows: T, K, minGroups, epilogue: { shader: 'matvec_router' as const, extra: [ib, wtb, cnt], aux: nExp } };
    matvecOp(ops, d);
    matvecOp(ops, d); // twice: the last workgroups reset the counters for the next use
    expect(ops.names[0]).toBe(`${shader}_f32`);
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const y = new Float32Array(dev.read(yb, 0, T * nExp * 4)), ids = new Uint32Array(dev.read(ib, 0, T * K * 4)), wts = new Float32Array(dev.read(wtb, 0, T * K * 4));
    for (let t = 0; t < T; t++) {
      const logits = q.matmul(GgmlType.F32, new Uint8Array(w.buffer), nExp, n, x.subarray(t * n, (t + 1) * n));
      for (let e = 0; e < nExp; e++) expect(Math.abs(y[t * nExp + e] - logits[e])).toBeLessThan(1e-4 * (Math.abs(logits[e]) + 1));
      const order = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a]).slice(0, K);
      expect(Array.from(ids.subarray(t * K, (t + 1) * K))).toEqual(order);
      const ex = order.map((e) => Math.exp(logits[e] - logits[order[0]])), tot = ex.reduce((a, b) => a + b, 0);
      order.forEach((_, k) => expect(Math.abs(wts[t * K + k] - ex[k] / tot)).toBeLessThan(1e-5));
    }
    expect(Array.from(new Uint32Array(dev.read(cnt, 0, T * 4)))).toEqual(new Array(T).fill(0));
    dev.freeCommand(cmd);
    [wb, xb, yb, ib, wtb, cnt].forEach((b) => dev.freeBuffer(b));
  });

  // prefill's routed experts: moe_tiles groups the (token, expert) pairs by expert, mm_moe runs
  // each expert's weights over its pairs: the fused SwiGLU (gate + up, X row = token) and the
  // down projection (X row = pair), each output compared with the WASM reference per pair; one
  // expert gets more pairs than a tile holds, some none; a window binding experts 1…3 only
  it.each([[GgmlType.Q2_K, 'q2_k'], [GgmlType.IQ2_XXS, 'iq2_xxs'], [GgmlType.Q8_0, 'q8_0'], [GgmlType.F32, 'f32']] as [number, string][])('expert tiles (mm_moe, %i %s) match per-pair products', (t, name) => {
    const rng = new Rng(t + 31);
    const nExp = 5, rows = 70, n = 256, K = 3, T = 20, P = T * K, rb = rowBytes(t, n), expertBytes = 2 * rows * rb;
    // expert e: gate rows then up rows (upBytes = rows·rb)
    const w = new Uint8Array(nExp * expertBytes);
    for (let r = 0; r < 2 * nExp * rows; r++) w.set(oracleRow(t, n, rng), r * rb);
    if (t === GgmlType.F32) { const f = new Float32Array(w.buffer); for (let i = 0; i < f.length; i++) f[i] = rng.normal(); }
    const x = new Float32Array(P * n).map(() => rng.normal());
    // expert 4 takes 40 pairs (two tiles), expert 2 none
    const ids = Uint32Array.from({ length: P }, (_, j) => (j % 3 !== 2 ? 4 : [0, 1, 3][rng.int(0, 2)]));
    const maxTiles = moeMaxTiles(P, nExp);
    const wb = dev.createBuffer(w.byteLength, false), xb = dev.createBuffer(x.byteLength, false), ib = dev.createBuffer(P * 4, false);
    const lb = dev.createBuffer(P * 4, false), tb = dev.createBuffer(16 * (1 + maxTiles), false);
    const yg = dev.createBuffer(P * rows * 4, true), yd = dev.createBuffer(P * rows * 4, true), yw = dev.createBuffer(P * rows * 4, true);
    dev.write(wb, 0, w); dev.write(xb, 0, new Uint8Array(x.buffer)); dev.write(ib, 0, new Uint8Array(ids.buffer));
    dev.write(yw, 0, new Uint8Array(P * rows * 4));
    const ops = new OpList(pipes);
    dispatch(ops, KERNELS.moe_tiles, { IDS: ib, LIST: lb, TILES: tb }, { nPairs: P, nExpert: nExp, BN: MM_MOE_PAIRS }, [1]);
    const base = { type: name, rows, n, rowBytes: rb, nRows: P, K, expertBytes, moe: { tiles: tb, maxTiles, ids: ib } };
    matvecOp(ops, { ...base, buffers: [wb, xb, yg, lb, grid], flags: 5, upBytes: rows * rb }); // GLU, X row = token
    matvecOp(ops, { ...base, buffers: [wb, xb, yd, lb, grid], flags: 3 }); // X row = pair
    // a window holding experts 1…3 only (bound from expert 1): other pairs' rows stay untouched
    matvecOp(ops, { ...base, buffers: [wb, xb, yw, lb, grid], flags: 3, e0: 1, ne: 3, wOffset: expertBytes });
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const got = [yg, yd, yw].map((b) => new Float32Array(dev.read(b, 0, P * rows * 4)));
    // the reference outputs per pair, then differences in units of each output's RMS (as above)
    const want = [new Float32Array(P * rows), new Float32Array(P * rows)];
    for (let j = 0; j < P; j++) {
      const e = ids[j], we = (o: number) => w.subarray(e * expertBytes + o, e * expertBytes + o + rows * rb);
      const xt = x.subarray(Math.floor(j / K) * n, (Math.floor(j / K) + 1) * n), xj = x.subarray(j * n, (j + 1) * n);
      const g = q.matmul(t, we(0), rows, n, xt), u = q.matmul(t, we(rows * rb), rows, n, xt), d = q.matmul(t, we(0), rows, n, xj);
      for (let r = 0; r < rows; r++) { want[0][j * rows + r] = (g[r] / (1 + Math.exp(-g[r]))) * u[r]; want[1][j * rows + r] = d[r]; }
    }
    const rms = want.map((v) => Math.sqrt(v.reduce((a, y) => a + y * y, 0) / v.length));
    let worst = 0;
    for (let i = 0; i < P * rows; i++) {
      worst = Math.max(worst, Math.abs(got[0][i] - want[0][i]) / rms[0], Math.abs(got[1][i] - want[1][i]) / rms[1]);
      const e = ids[Math.floor(i / rows)];
      if (e >= 1 && e <= 3) worst = Math.max(worst, Math.abs(got[2][i] - want[1][i]) / rms[1]);
      else expect(got[2][i]).toBe(0);
    }
    expect(worst, `${name}: worst difference / RMS`).toBeLessThan(1e-4);
    dev.freeCommand(cmd);
    [wb, xb, ib, lb, tb, yg, yd, yw].forEach((b) => dev.freeBuffer(b));
  });
});

const VARIANTS = [
  ['tinyA', 'bf16', 'reference-logits.f32'], ['tinyA', 'q8_0', 'reference-logits-q8_0.f32'], ['tinyA', 'q2', 'reference-logits-q2.f32'],
  ['tinyA', 'q2q4', 'reference-logits-q2q4.f32'], ['tinyR', 'bf16', 'reference-logits.f32'], ['tinyR', 'q2', 'reference-logits-q2.f32'],
] as const;

describe.each(VARIANTS)('Vulkan end to end vs oracle: %s %s', (model, variant, refName) => {
  const ref = JSON.parse(fs.readFileSync(fixture(model, 'reference.json'), 'utf8'));
  const logits = new Float32Array(fs.readFileSync(fixture(model, refName)).buffer.slice(0));
  const cases = (ref.cases as { kind: string; prompt_ids: number[]; greedy_ids: number[]; logits_offset_bytes: number; vocab: number }[])
    .map((c, i) => [i, c] as const).filter(([i]) => FULL || i === 0 || i === 3);
  let e: Engine;
  beforeAll(async () => { e = await openEngine({ model: fixture(model, `${model}-${variant}.gguf`), backend: 'vulkan', ctx: 768, kvTypes: { k: 'f16', v: 'f16' } }); });

  it.each(cases)('case %i: p99 max|Δlogit| ≤ 1e-2 (≤ 1% of positions above)', async (_i, c) => {
    const errs = await oracleLogitErrors(e, c, logits);
    const sorted = errs.slice().sort((a, b) => a - b);
    const p99 = sorted[Math.floor(0.99 * (sorted.length - 1))];
    console.log(`vulkan ${model} ${variant} case ${_i}: max ${sorted[sorted.length - 1].toExponential(2)} p99 ${p99.toExponential(2)} (${errs.length} positions)`);
    expect(p99).toBeLessThanOrEqual(1e-2);
    expect(errs.filter((x) => x > 1e-2).length / errs.length).toBeLessThanOrEqual(0.01);
  });

  if (variant === 'bf16') {
    it('greedy generation equals HF greedy_ids', async () => {
      for (const [, c] of cases) {
        const s = e.newSession();
        await s.eval(c.prompt_ids);
        const out: number[] = [];
        for (let k = 0; k < c.greedy_ids.length; k++) { const id = s.sample({ temperature: 0 }); out.push(id); await s.eval([id]); }
        s.dispose();
        expect(out).toEqual(c.greedy_ids);
      }
    });
  }
});

describe('Vulkan prefill equals token-by-token decode; payloads move between backends', () => {
  let vk: Engine, cpu: Engine;
  beforeAll(async () => {
    vk = await openEngine({ model: fixture('tinyR/tinyR-q2.gguf'), backend: 'vulkan', ctx: 2100, kvTypes: { k: 'q8_0', v: 'q4_0' } });
    cpu = await openEngine({ model: fixture('tinyR/tinyR-q2.gguf'), backend: 'cpu', ctx: 2100, kvTypes: { k: 'q8_0', v: 'q4_0' } });
  });
  // 512 and 2048: test/vulkan-prefill-long.test.ts (its own fork: minutes of lavapipe)
  it.each([1, 63, 64, 65])('%i tokens', async (n) => {
    const m = await prefillVsDecode(vk, n);
    console.log(`vulkan prefill ${n}: max |chunked − token-by-token| = ${m.toExponential(2)}`);
    expect(m).toBeLessThanOrEqual(1e-3);
  });

  it('greedy sampling takes the device arg-max, equal to the first maximum of the read-back row, across interleaved sessions', async () => {
    const first = (l: Float32Array) => { let bi = 0; for (let i = 1; i < l.length; i++) if (l[i] > l[bi]) bi = i; return bi; };
    const a = vk.newSession(), b = vk.newSession();
    await a.eval([5, 17, 300, 42, 9]);
    const idA = a.sample({ temperature: 0 }); // nothing read back yet: the device's arg-max
    await b.eval([700, 3, 3, 81]); // overwrites the engine's logits buffers: a's row is kept first
    const idB = b.sample({ temperature: 0 });
    expect(idA).toBe(first(a.logits()));
    expect(idB).toBe(first(b.logits()));
    const c = cpu.newSession();
    await c.eval([5, 17, 300, 42, 9]);
    expect(idA).toBe(c.sample({ temperature: 0 }));
    a.dispose(); b.dispose(); c.dispose();
  });

  it('a payload saved on Vulkan continues on the CPU (and back) like an uninterrupted run', async () => {
    const r = new Rng(99);
    const toks = Array.from({ length: 90 }, () => r.int(0, 1032));
    const v1 = vk.newSession();
    await v1.eval(toks.slice(0, 60));
    const c1 = cpu.newSession();
    c1.loadPayload(v1.savePayload());
    await c1.eval(toks.slice(60));
    const cRef = cpu.newSession();
    await cRef.eval(toks);
    let m = 0;
    for (let i = 0; i < c1.logits().length; i++) m = Math.max(m, Math.abs(c1.logits()[i] - cRef.logits()[i]));
    console.log(`vulkan→cpu payload: max |Δ| vs an all-CPU run = ${m.toExponential(2)}`);
    expect(m).toBeLessThanOrEqual(1e-2);
    // and back: CPU → Vulkan
    const c2 = cpu.newSession();
    await c2.eval(toks.slice(0, 60));
    const v2 = vk.newSession();
    v2.loadPayload(c2.savePayload());
    await v2.eval(toks.slice(60));
    const vRef = vk.newSession();
    await vRef.eval(toks);
    let m2 = 0;
    for (let i = 0; i < v2.logits().length; i++) m2 = Math.max(m2, Math.abs(v2.logits()[i] - vRef.logits()[i]));
    console.log(`cpu→vulkan payload: max |Δ| vs an all-Vulkan run = ${m2.toExponential(2)}`);
    expect(m2).toBeLessThanOrEqual(1e-2);
    expect(v2.sample({ temperature: 0 })).toBe(vRef.sample({ temperature: 0 }));
  });

  it('a disk cache file written from the Vulkan backend loads on the CPU backend and continues', async () => {
    const { DiskCache } = await import('../ts/server/kv-disk/disk-cache.js');
    const dir = (await import('./helpers.js')).tmpDir();
    const { modelIdentity } = await import('../ts/model/fingerprint.js');
    // one model file on both backends: one fingerprint
    const cache = new DiskCache({ dir, budgetBytes: 1 << 30, model: modelIdentity(vk.options.model) });
    const r = new Rng(7);
    const toks = Array.from({ length: 70 }, () => r.int(0, 1032));
    const v = vk.newSession();
    await v.eval(toks.slice(0, 50));
    const file = cache.save({ reason: 'cold', text: 'vulkan prefix', payload: v.savePayload(), tokens: 50, ctx: 2100 });
    const loaded = cache.load(file)!;
    const c = cpu.newSession();
    c.loadPayload(loaded.payload);
    await c.eval(toks.slice(50));
    const ref = cpu.newSession();
    await ref.eval(toks);
    let m = 0;
    for (let i = 0; i < c.logits().length; i++) m = Math.max(m, Math.abs(c.logits()[i] - ref.logits()[i]));
    expect(m).toBeLessThanOrEqual(1e-2);
    expect(c.sample({ temperature: 0 })).toBe(ref.sample({ temperature: 0 }));
  });

  it('refuses a configuration the device cannot hold, with a clear error', async () => {
    // 262144-token steps need GiBs of scratch: more than lavapipe's 2 GiB budget, or (a GPU
    // with more) a scratch buffer over its largest binding
    await expect(openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 4096, chunk: 262144 })).rejects.toThrow(/does not fit .*scratch \d+\.\d\d GiB.*smaller prefill chunk|scratch buffer \w+ \(\d+ MiB for 262144-token steps at ctx 4096\) exceeds this device's largest binding/);
  });
});

describe('steering on the GPU', () => {
  it('matches the CPU reference with attention and FFN edits', async () => {
    const s = { nLayer: 4, nEmbd: 256 };
    const r = new Rng(3);
    const d = new Float32Array(s.nLayer * s.nEmbd);
    for (let l = 0; l < s.nLayer; l++) {
      let n = 0;
      for (let i = 0; i < s.nEmbd; i++) { d[l * s.nEmbd + i] = r.normal(); n += d[l * s.nEmbd + i] ** 2; }
      for (let i = 0; i < s.nEmbd; i++) d[l * s.nEmbd + i] /= Math.sqrt(n);
    }
    const steering = { directions: d, attnScale: 0.5, ffnScale: 1 };
    const toks = [5, 17, 99, 300, 12, 8, 640, 2];
    const run = async (backend: 'cpu' | 'vulkan', st?: typeof steering) => {
      const e = await openEngine({ model: fixture('tinyA/tinyA-q8_0.gguf'), backend, ctx: 64, kvTypes: { k: 'f16', v: 'f16' }, steering: st });
      const ses = e.newSession();
      await ses.eval(toks);
      const out = ses.logits().slice();
      e.dispose();
      return out;
    };
    const [cpuS, vkS, vkPlain] = [await run('cpu', steering), await run('vulkan', steering), await run('vulkan')];
    let m = 0, moved = 0;
    for (let i = 0; i < cpuS.length; i++) { m = Math.max(m, Math.abs(cpuS[i] - vkS[i])); moved = Math.max(moved, Math.abs(vkS[i] - vkPlain[i])); }
    expect(m).toBeLessThanOrEqual(1e-2);
    expect(moved).toBeGreaterThan(1e-3); // the edit changes the output
  });
});
