/**
 * Op-level checks of the attention, router, DeltaNet, KV-store, norm, RoPE and conv shaders against plain JS statements of the math
 * (the KV rows go through the WASM quantizers and dequantizers, the CPU engine's reference):
 * attn_flash / attn_tile + attn_merge over several blocks, GQA, decode and prefill shapes, every cache type;
 * router top-k with ties; the DeltaNet recurrence with its fused norms; kv_store (bit for bit
 * against the WASM quantizers), rmsnorm modes, qk_prep and ssm_conv.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, rowBytes } from '../ts/gguf/index.js';
import { QuantKernels } from '../ts/core/quant.js';
import { DELTANET_BLOCK, DELTANET_BLOCK_FLOATS, OpList, Pipelines, attnBlock, attnTileTokens } from '../ts/engine/vulkan/graph.js';
import { KERNELS, dispatch, groups } from '../ts/engine/vulkan/kernels.js';
import { deltanetWalk } from '../ts/engine/vulkan/limits.js';
import type { ModelShape } from '../ts/model/shape.js';
import { loadAddon } from '../ts/vk/addon.js';
import { Rng } from '../ts/model/synth.js';

const q = new QuantKernels();
const dev = new (loadAddon().Device)(-1);
const pipes = new Pipelines(dev);

function buffer(data: Float32Array | Uint32Array | Uint8Array): number {
  const b = dev.createBuffer(Math.max(4, data.byteLength), false);
  dev.write(b, 0, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return b;
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const KV_TYPES = [['f32', GgmlType.F32], ['f16', GgmlType.F16], ['q8_0', GgmlType.Q8_0], ['q4_0', GgmlType.Q4_0]] as const;

describe('attn_flash + attn_merge vs a plain attention', () => {
  // heads (query, KV) of hd; a decode step's blocks grow past 96 base blocks of 64 (attn_span.glsl:
  // 128 from position 6144, 256 from 12288, 512 from 24576)
  const cases: [string, number, number, string, string, 'attn_flash' | 'attn_tile', number, number, number][] = [];
  for (const [T, pos] of [[1, 0], [1, 63], [1, 64], [1, 650], [1, 2500], [1, 4200], [1, 6200], [1, 12400], [1, 24700], [5, 520], [70, 130], [33, 0]] as const) {
    for (const kernel of T > 1 ? ['attn_flash', 'attn_tile'] as const : ['attn_flash'] as const) {
      for (const [kName] of KV_TYPES) for (const [vName] of KV_TYPES) if (kName === vName || (kName === 'q8_0' && vName === 'q4_0')) cases.push([`${kernel} T=${T} pos=${pos} K ${kName} V ${vName}`, T, pos, kName, vName, kernel, 8, 2, 64]);
    }
  }
  // the model's shape (16 query heads, 2 KV heads of 256), its cache types
  for (const pos of [0, 2500, 7000, 24700]) cases.push([`attn_flash T=1 pos=${pos} K q8_0 V q4_0, 16/2 heads of 256`, 1, pos, 'q8_0', 'q4_0', 'attn_flash', 16, 2, 256]);
  it.each(cases)('%s', (_name, T, pos, kName, vName, kernel, nHead, nHeadKv, hd) => {
    const kvDim = nHeadKv * hd, qStride = 2 * nHead * hd;
    const shape = { nHead, nHeadKv, headDim: hd } as ModelShape;
    const grow = T === 1 ? 1 : 0;
    const r = new Rng(T * 1000 + pos);
    // 700 rows, or enough for the deep cases (40 and 66 decode blocks: attn_merge's 8-block trips)
    const ctx = Math.max(700, pos + T + 1);
    const kT = KV_TYPES.find((x) => x[0] === kName)![1], vT = KV_TYPES.find((x) => x[0] === vName)![1];
    const n = pos + T; // cache rows written (this step's included)
    const kRows = Array.from({ length: n }, () => Float32Array.from({ length: kvDim }, () => r.normal()));
    const vRows = Array.from({ length: n }, () => Float32Array.from({ length: kvDim }, () => r.normal()));
    const enc = (t: number, rows: Float32Array[]) => {
      const rb = rowBytes(t, kvDim), out = new Uint8Array(ctx * rb);
      rows.forEach((row, i) => out.set(q.quantize(t, row), i * rb));
      return out;
    };
    const kc = enc(kT, kRows), vc = enc(vT, vRows);
    // the reference reads the cache the way the CPU engine does: dequantized rows
    const kd = kRows.map((_, i) => q.dequantize(kT, kc.subarray(i * rowBytes(kT, kvDim)), kvDim));
    const vd = vRows.map((_, i) => q.dequantize(vT, vc.subarray(i * rowBytes(vT, kvDim)), kvDim));
    const qg = Float32Array.from({ length: T * qStride }, () => r.normal());
    const blk = attnBlock(shape, T, kernel === 'attn_tile'), nBlk = Math.ceil(ctx / blk);
    const bufs = {
      QG: buffer(qg), K: buffer(kc), V: buffer(vc), P: dev.createBuffer(T * nHead * nBlk * hd * 4, false), ML: dev.createBuffer(T * nHead * nBlk * 8, false),
      O: dev.createBuffer(T * nHead * hd * 4, true), PARAMS: buffer(Uint32Array.of(pos, T, 0, 0)),
    };
    const ops = new OpList(pipes);
    const push = { nHead, nHeadKv, hd, kRowBytes: rowBytes(kT, kvDim), vRowBytes: rowBytes(vT, kvDim), qStride, scale: 1 / Math.sqrt(hd), nBlk, blk, t0: 0, grow };
    const bind = { QG: bufs.QG, Kc: bufs.K, Vc: bufs.V, P: bufs.P, ML: bufs.ML, PARAMS: bufs.PARAMS };
    if (kernel === 'attn_tile') {
      const tq = attnTileTokens(shape);
      dispatch(ops, KERNELS.attn_tile, bind, { ...push, nTok: T, tq }, [Math.ceil(T / tq), nHeadKv, nBlk], { variant: `${kName}_${vName}` });
    } else {
      dispatch(ops, KERNELS.attn_flash, bind, push, [T, nHeadKv, nBlk], { variant: `${kName}_${vName}` });
    }
    dispatch(ops, KERNELS.attn_merge, { P: bufs.P, ML: bufs.ML, QG: bufs.QG, O: bufs.O, PARAMS: bufs.PARAMS }, { nHead, hd, nBlk, qStride, blk, t0: 0, grow }, [T, nHead]);
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const got = new Float32Array(dev.read(bufs.O, 0, T * nHead * hd * 4));
    let worst = 0;
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < nHead; h++) {
        const kvh = Math.floor(h / (nHead / nHeadKv));
        const qh = qg.subarray(t * qStride + h * 2 * hd, t * qStride + h * 2 * hd + hd);
        const s: number[] = [];
        for (let u = 0; u <= pos + t; u++) { let d = 0; for (let i = 0; i < hd; i++) d += qh[i] * kd[u][kvh * hd + i]; s.push(d / Math.sqrt(hd)); }
        const m = Math.max(...s), e = s.map((x) => Math.exp(x - m)), sum = e.reduce((a, b) => a + b, 0);
        for (let i = 0; i < hd; i++) {
          let o = 0;
          for (let u = 0; u <= pos + t; u++) o += (e[u] / sum) * vd[u][kvh * hd + i];
          const want = o * sigmoid(qg[t * qStride + h * 2 * hd + hd + i]);
          worst = Math.max(worst, Math.abs(got[(t * nHead + h) * hd + i] - want));
        }
      }
    }
    expect(worst).toBeLessThan(2e-5);
    dev.freeCommand(cmd);
    Object.values(bufs).forEach((b) => dev.freeBuffer(b));
  });
});

describe('router vs a plain softmax top-k (ties to the lower id)', () => {
  it.each([[256, 8], [64, 4], [7, 3]] as const)('%i experts, top-%i', (nExpert, K) => {
    const T = 3, r = new Rng(nExpert + K);
    const logits = Float32Array.from({ length: T * nExpert }, () => Math.round(r.normal() * 4) / 4); // many exact ties
    const R = buffer(logits), IDS = dev.createBuffer(T * K * 4, true), WTS = dev.createBuffer(T * K * 4, true);
    const rops = new OpList(pipes);
    dispatch(rops, KERNELS.router, { R, IDS, WTS }, { nExpert, K }, [T]);
    const cmd = dev.record(rops.build(), false);
    dev.runSync(cmd);
    const ids = new Uint32Array(dev.read(IDS, 0, T * K * 4)), wts = new Float32Array(dev.read(WTS, 0, T * K * 4));
    for (let t = 0; t < T; t++) {
      const row = Array.from(logits.subarray(t * nExpert, (t + 1) * nExpert));
      const m = Math.max(...row), e = row.map((x) => Math.exp(x - m)), sum = e.reduce((a, b) => a + b, 0);
      const order = row.map((_, i) => i).sort((a, b) => (e[b] - e[a]) || (a - b)).slice(0, K);
      const tot = order.reduce((a, i) => a + e[i] / sum, 0);
      expect(Array.from(ids.subarray(t * K, (t + 1) * K))).toEqual(order);
      order.forEach((i, k) => expect(Math.abs(wts[t * K + k] - e[i] / sum / tot)).toBeLessThan(1e-6));
    }
    dev.freeCommand(cmd);
    [R, IDS, WTS].forEach((b) => dev.freeBuffer(b));
  });
});

const p16Cases = deltanetWalk(dev.info()) === 'deltanet_chunk_p16'
  ? [['deltanet_chunk_p16', 128, 2, 4, 37], ['deltanet_chunk_p16', 32, 1, 2, 32], ['deltanet_chunk_p16', 64, 1, 1, 1]] as const : [];
describe('deltanet vs a plain gated delta rule', () => {
  it('the walk with 16 row parts a column where subgroups have 16 lanes or more, else 8', () => {
    expect([8, 16, 32, 64].map((n) => deltanetWalk({ subgroupSize: n }))).toEqual(['deltanet_chunk', 'deltanet_chunk_p16', 'deltanet_chunk_p16', 'deltanet_chunk_p16']);
  });
  const softplus = (x: number) => (x > 20 ? x : Math.log(1 + Math.exp(x)));
  const silu = (x: number) => x * sigmoid(x);
  // deltanet: the recurrence token by token (decode); deltanet_chunk: the chunked form (prefill),
  // blocks of 16 tokens: one partial block, exact blocks, three blocks with a partial last one
  // (deltanet_chunk_p16: the same walk with 16 row parts a column, which the engine takes where
  // subgroups have 16 lanes or more: run at 16 lanes, the subgroup16 project)
  it.each([['deltanet', 128, 2, 4, 5], ['deltanet', 32, 1, 2, 3], ['deltanet', 128, 4, 4, 1], ['deltanet_chunk', 128, 2, 4, 5], ['deltanet_chunk', 32, 1, 2, 32],
    ['deltanet_chunk', 128, 2, 4, 37], ['deltanet_chunk', 32, 1, 1, 1], ...p16Cases] as const)('%s: dk %i, %i key heads, %i value heads, %i tokens', (shader, dk, hk, hv, T) => {
    const r = new Rng(dk + hk * 10 + T);
    const convCh = 2 * hk * dk + hv * dk, eps = 1e-6, qScale = 1 / Math.sqrt(dk);
    const U = Float32Array.from({ length: T * convCh }, () => r.normal());
    const Bt = Float32Array.from({ length: T * hv }, () => r.normal());
    const AL = Float32Array.from({ length: T * hv }, () => r.normal());
    const DT = Float32Array.from({ length: hv }, () => r.normal() * 0.5);
    const A = Float32Array.from({ length: hv }, () => -Math.exp(r.normal() * 0.5));
    const S0 = Float32Array.from({ length: hv * dk * dk }, () => r.normal() * 0.1); // key-row-major per head
    const Z = Float32Array.from({ length: T * hv * dk }, () => r.normal());
    const NW = Float32Array.from({ length: dk }, () => 1 + r.normal() * 0.1);
    const b = { U: buffer(U), Bt: buffer(Bt), AL: buffer(AL), DT: buffer(DT), A: buffer(A), S: buffer(S0), O: dev.createBuffer(T * hv * dk * 4, true), Z: buffer(Z), NW: buffer(NW) };
    const push = { T, dk, hk, hv, convCh, eps, qScale };
    const common = { U: b.U, B: b.Bt, AL: b.AL, dtBias: b.DT, A: b.A, state: b.S, O: b.O };
    // the chunked form leaves the gated norm to ssm_gnorm (its workgroups hold 32 columns of a head)
    const ops = new OpList(pipes);
    let DBK: number | undefined;
    if (shader === 'deltanet') dispatch(ops, KERNELS.deltanet, { ...common, Z: b.Z, normWeight: b.NW, CK: b.S }, { ...push, ckRows: 0 }, [hv]);
    else {
      // deltanet_prep's per-block record first (the state-free part of each 16-token block)
      DBK = dev.createBuffer(Math.ceil(T / DELTANET_BLOCK) * hv * DELTANET_BLOCK_FLOATS * 4, false);
      dispatch(ops, KERNELS.deltanet_prep, { U: b.U, B: b.Bt, AL: b.AL, dtBias: b.DT, A: b.A, DBK }, push, [Math.ceil(T / DELTANET_BLOCK), hv]);
      const walk = KERNELS[shader];
      dispatch(ops, walk, { U: b.U, DBK, state: b.S, O: b.O }, push, [hv, groups(walk, dk)]);
      dispatch(ops, KERNELS.ssm_gnorm, { O: b.O, Z: b.Z, normWeight: b.NW }, { dk, hv, eps }, [T, hv]);
    }
    const cmd = dev.record(ops.build(), false);
    dev.runSync(cmd);
    const O = new Float32Array(dev.read(b.O, 0, T * hv * dk * 4)), S = new Float32Array(dev.read(b.S, 0, hv * dk * dk * 4));
    let worstO = 0, worstS = 0;
    for (let h = 0; h < hv; h++) {
      const kh = h % hk;
      const st = Array.from({ length: dk }, (_, i) => Array.from({ length: dk }, (_, j) => S0[(h * dk + i) * dk + j]));
      for (let t = 0; t < T; t++) {
        const u = U.subarray(t * convCh);
        const qv = Array.from(u.subarray(kh * dk, kh * dk + dk)), kv = Array.from(u.subarray(hk * dk + kh * dk, hk * dk + kh * dk + dk));
        const v = u.subarray(2 * hk * dk + h * dk, 2 * hk * dk + h * dk + dk);
        const nq = 1 / Math.sqrt(qv.reduce((a, x) => a + x * x, 0) + 1e-6), nk = 1 / Math.sqrt(kv.reduce((a, x) => a + x * x, 0) + 1e-6);
        const qn = qv.map((x) => x * nq * qScale), kn = kv.map((x) => x * nk);
        const beta = sigmoid(Bt[t * hv + h]), g = Math.exp(A[h] * softplus(AL[t * hv + h] + DT[h]));
        const o: number[] = [];
        for (let j = 0; j < dk; j++) {
          let rj = 0;
          for (let i = 0; i < dk; i++) { st[i][j] *= g; rj += st[i][j] * kn[i]; }
          const delta = beta * (v[j] - rj);
          let oj = 0;
          for (let i = 0; i < dk; i++) { st[i][j] += kn[i] * delta; oj += st[i][j] * qn[i]; }
          o.push(oj);
        }
        const rms = 1 / Math.sqrt(o.reduce((a, x) => a + x * x, 0) / dk + eps);
        for (let j = 0; j < dk; j++) {
          const idx = t * hv * dk + h * dk + j;
          const want = o[j] * rms * NW[j] * silu(Z[idx]);
          worstO = Math.max(worstO, Math.abs(O[idx] - want) / (Math.abs(want) + 1));
        }
      }
      for (let i = 0; i < dk; i++) for (let j = 0; j < dk; j++) worstS = Math.max(worstS, Math.abs(S[(h * dk + i) * dk + j] - st[i][j]));
    }
    expect(worstO).toBeLessThan(1e-4);
    expect(worstS).toBeLessThan(1e-5);
    dev.freeCommand(cmd);
    Object.values(b).forEach((x) => dev.freeBuffer(x));
    if (DBK !== undefined) dev.freeBuffer(DBK);
  });
});

describe('kv_store vs the WASM quantizers', () => {
  it.each(KV_TYPES)('%s rows land at pos + t, equal to the reference encoding', (name, t) => {
    const kvDim = 256, T = 3, pos = 5, ctx = 12, r = new Rng(t + 1);
    const rows = Float32Array.from({ length: T * kvDim }, () => r.normal() * 3);
    rows[7] = 0; rows.fill(0, kvDim, kvDim + 32); // an all-zero block (d = 0)
    const rb = rowBytes(t, kvDim);
    const K = buffer(rows), C = buffer(new Uint8Array(ctx * rb).fill(0xab)), P = buffer(Uint32Array.of(pos, T, 0, 0));
    const kops = new OpList(pipes);
    dispatch(kops, KERNELS.kv_store, { src: K, src2: K, cache: C, cache2: C, PARAMS: P }, { kvDim, rowBytes: rb }, [T, 1], { variant: name });
    const cmd = dev.record(kops.build(), false);
    dev.runSync(cmd);
    const got = new Uint8Array(dev.read(C, 0, ctx * rb));
    for (let i = 0; i < T; i++) expect(got.subarray((pos + i) * rb, (pos + i + 1) * rb)).toEqual(q.quantize(t, rows.subarray(i * kvDim, (i + 1) * kvDim)));
    // rows outside [pos, pos + T) untouched
    expect(got.subarray(0, pos * rb).every((x) => x === 0xab)).toBe(true);
    expect(got.subarray((pos + T) * rb).every((x) => x === 0xab)).toBe(true);
    dev.freeCommand(cmd);
    [K, C, P].forEach((b) => dev.freeBuffer(b));
  });
});

describe('rmsnorm (with the fused residual add and MoE combine), qk_prep, ssm_conv vs plain math', () => {
  it('rmsnorm modes 0, 1, 2', () => {
    const n = 2048, K = 8, T = 2, eps = 1e-6, r = new Rng(11);
    const rand = (len: number) => Float32Array.from({ length: len }, () => r.normal());
    const X0 = rand(T * n), W = rand(n), R = rand(T * n), D = rand(T * K * n), WTS = rand(T * K), DS = rand(T * n), SG = rand(T);
    for (const mode of [0, 1, 2]) {
      const b = { X: buffer(X0), Y: dev.createBuffer(T * n * 4, true), W: buffer(W), R: buffer(R), D: buffer(D), WTS: buffer(WTS), DS: buffer(DS), SG: buffer(SG), XQ: dev.createBuffer(T * 3 * n, false), XS: dev.createBuffer(T * n / 2, false) };
      const nops = new OpList(pipes);
      dispatch(nops, KERNELS.rmsnorm, { X: b.X, A: b.Y, weight: b.W, R: b.R, DE: b.D, WTS: b.WTS, DS: b.DS, SG: b.SG, XQ: b.XQ, XS: b.XS }, { n, row0: 0, eps, mode, K, quant: 0 }, [T]);
      const cmd = dev.record(nops.build(), false);
      dev.runSync(cmd);
      const Y = new Float32Array(dev.read(b.Y, 0, T * n * 4)), X = new Float32Array(dev.read(b.X, 0, T * n * 4));
      let worst = 0;
      for (let t = 0; t < T; t++) {
        const x = Array.from({ length: n }, (_, i) => {
          let v = X0[t * n + i];
          if (mode === 1) v += R[t * n + i];
          if (mode === 2) { for (let k = 0; k < K; k++) v += WTS[t * K + k] * D[(t * K + k) * n + i]; v += sigmoid(SG[t]) * DS[t * n + i]; }
          return v;
        });
        const s = 1 / Math.sqrt(x.reduce((a, v) => a + v * v, 0) / n + eps);
        x.forEach((v, i) => {
          worst = Math.max(worst, Math.abs(X[t * n + i] - v) / (Math.abs(v) + 1), Math.abs(Y[t * n + i] - v * s * W[i]) / (Math.abs(v * s * W[i]) + 1));
        });
      }
      expect(worst, `mode ${mode}`).toBeLessThan(2e-6);
      dev.freeCommand(cmd);
      Object.values(b).forEach((x) => dev.freeBuffer(x));
    }
  });

  it('qk_prep: per-head norm then NeoX RoPE on the first nRot dimensions', () => {
    const nHead = 4, nHeadKv = 2, hd = 256, nRot = 64, T = 2, pos = 37, eps = 1e-6, theta = 1e7, r = new Rng(12);
    const qStride = 2 * nHead * hd, kStride = nHeadKv * hd, half = nRot / 2, ctx = 64;
    const QG0 = Float32Array.from({ length: T * qStride }, () => r.normal()), K0 = Float32Array.from({ length: T * kStride }, () => r.normal());
    const QN = Float32Array.from({ length: hd }, () => 1 + r.normal() * 0.1), KN = Float32Array.from({ length: hd }, () => 1 + r.normal() * 0.1);
    const rope = new Float32Array(ctx * half * 2);
    for (let p = 0; p < ctx; p++) for (let i = 0; i < half; i++) { const a = p * Math.pow(theta, (-2 * i) / nRot); rope[(p * half + i) * 2] = Math.cos(a); rope[(p * half + i) * 2 + 1] = Math.sin(a); }
    const b = { QG: buffer(QG0), K: buffer(K0), QN: buffer(QN), KN: buffer(KN), ROPE: buffer(rope), P: buffer(Uint32Array.of(pos, T, 0, 0)) };
    const qops = new OpList(pipes);
    dispatch(qops, KERNELS.qk_prep, { QG: b.QG, K: b.K, qNorm: b.QN, kNorm: b.KN, ROPE: b.ROPE, PARAMS: b.P }, { nHead, nHeadKv, hd, nRot, qStride, kStride, eps }, [T, nHead + nHeadKv]);
    const cmd = dev.record(qops.build(), false);
    dev.runSync(cmd);
    const QG = new Float32Array(dev.read(b.QG, 0, T * qStride * 4)), K = new Float32Array(dev.read(b.K, 0, T * kStride * 4));
    let worst = 0;
    const check = (src: Float32Array, got: Float32Array, base: number, w: Float32Array, p: number) => {
      const x = Array.from(src.subarray(base, base + hd));
      const s = 1 / Math.sqrt(x.reduce((a, v) => a + v * v, 0) / hd + eps);
      const v = x.map((e, i) => e * s * w[i]);
      for (let d = 0; d < hd; d++) {
        let y = v[d];
        if (d < half) { const a = p * Math.pow(theta, (-2 * d) / nRot); y = v[d] * Math.cos(a) - v[d + half] * Math.sin(a); }
        else if (d < nRot) { const a = p * Math.pow(theta, (-2 * (d - half)) / nRot); y = v[d] * Math.cos(a) + v[d - half] * Math.sin(a); }
        worst = Math.max(worst, Math.abs(got[base + d] - y));
      }
    };
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < nHead; h++) {
        check(QG0, QG, t * qStride + h * 2 * hd, QN, pos + t);
        // the gate half of the slice is left alone
        for (let d = 0; d < hd; d++) expect(QG[t * qStride + h * 2 * hd + hd + d]).toBe(QG0[t * qStride + h * 2 * hd + hd + d]);
      }
      for (let h = 0; h < nHeadKv; h++) check(K0, K, t * kStride + h * hd, KN, pos + t);
    }
    expect(worst).toBeLessThan(1e-5);
    dev.freeCommand(cmd);
    Object.values(b).forEach((x) => dev.freeBuffer(x));
  });

  // T = 2: shorter than the history; 5: one tile; 130: three 64-token tiles, the last of 2 tokens
  it.each([2, 5, 130])('ssm_conv: causal width-4 depthwise conv + SiLU across a %i-token chunk, history carried', (T) => {
    const ch = 300, w = 4, r = new Rng(13 + T);
    const U0 = Float32Array.from({ length: T * ch }, () => r.normal()), CW = Float32Array.from({ length: ch * w }, () => r.normal()), H0 = Float32Array.from({ length: ch * (w - 1) }, () => r.normal());
    const b = { U: buffer(U0), CW: buffer(CW), H: buffer(H0) };
    const cops = new OpList(pipes);
    dispatch(cops, KERNELS.ssm_conv, { U: b.U, weight: b.CW, state: b.H, CK: b.H }, { convCh: ch, T, width: w, ckRows: 0 }, [groups(KERNELS.ssm_conv, ch)]);
    const cmd = dev.record(cops.build(), false);
    dev.runSync(cmd);
    const U = new Float32Array(dev.read(b.U, 0, T * ch * 4)), H = new Float32Array(dev.read(b.H, 0, ch * (w - 1) * 4));
    let worst = 0;
    for (let c = 0; c < ch; c++) {
      const seq = [...Array.from(H0.subarray(c * (w - 1), (c + 1) * (w - 1))), ...Array.from({ length: T }, (_, t) => U0[t * ch + c])];
      for (let t = 0; t < T; t++) {
        let acc = 0;
        for (let i = 0; i < w; i++) acc += CW[c * w + i] * seq[t + i];
        worst = Math.max(worst, Math.abs(U[t * ch + c] - acc * sigmoid(acc)));
      }
      expect(Array.from(H.subarray(c * (w - 1), (c + 1) * (w - 1)))).toEqual(seq.slice(T).map((x) => Math.fround(x)));
    }
    expect(worst).toBeLessThan(1e-5);
    dev.freeCommand(cmd);
    Object.values(b).forEach((x) => dev.freeBuffer(x));
  });
});
