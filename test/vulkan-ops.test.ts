/**
 * Op-level checks of the attention, router and DeltaNet shaders against plain JS statements of the math
 * (the KV rows go through the WASM quantizers and dequantizers, the CPU engine's reference):
 * attn_flash + attn_merge over several blocks, GQA, decode and prefill shapes, every cache type;
 * router top-k with ties; the DeltaNet recurrence with its fused norms.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, rowBytes } from '../ts/gguf/index.js';
import { QuantKernels } from '../ts/core/quant.js';
import { OpList, PIPELINES, Pipelines, attnBlock, fbits } from '../ts/engine/vulkan/graph.js';
import type { ModelShape } from '../ts/model/shape.js';
import { loadAddon } from '../ts/vk/addon.js';
import { Rng } from '../ts/model/synth.js';

const q = new QuantKernels();
const dev = new (loadAddon().Device)(-1);
const pipes = new Pipelines(dev, PIPELINES);

function buffer(data: Float32Array | Uint32Array | Uint8Array): number {
  const b = dev.createBuffer(Math.max(4, data.byteLength), false);
  dev.write(b, 0, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return b;
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const KV_TYPES = [['f32', GgmlType.F32], ['f16', GgmlType.F16], ['q8_0', GgmlType.Q8_0], ['q4_0', GgmlType.Q4_0]] as const;

describe('attn_flash + attn_merge vs a plain attention', () => {
  const nHead = 8, nHeadKv = 2, hd = 64, ctx = 700, kvDim = nHeadKv * hd, qStride = 2 * nHead * hd;
  const shape = { nHead, nHeadKv, headDim: hd } as ModelShape;
  const cases: [string, number, number, string, string][] = [];
  for (const [T, pos] of [[1, 0], [1, 63], [1, 64], [1, 650], [5, 520]] as const) {
    for (const [kName] of KV_TYPES) for (const [vName] of KV_TYPES) if (kName === vName || (kName === 'q8_0' && vName === 'q4_0')) cases.push([`T=${T} pos=${pos} K ${kName} V ${vName}`, T, pos, kName, vName]);
  }
  it.each(cases)('%s', (_name, T, pos, kName, vName) => {
    const r = new Rng(T * 1000 + pos);
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
    const blk = attnBlock(shape, T), nBlk = Math.ceil(ctx / blk);
    const bufs = {
      QG: buffer(qg), K: buffer(kc), V: buffer(vc), P: dev.createBuffer(T * nHead * nBlk * hd * 4, false), ML: dev.createBuffer(T * nHead * nBlk * 8, false),
      O: dev.createBuffer(T * nHead * hd * 4, true), PARAMS: buffer(Uint32Array.of(pos, T, 0, 0)),
    };
    const ops = new OpList(pipes)
      .op(`attn_flash_${kName}_${vName}`, [bufs.QG, bufs.K, bufs.V, bufs.P, bufs.ML, bufs.PARAMS],
        [nHead, nHeadKv, hd, rowBytes(kT, kvDim), rowBytes(vT, kvDim), qStride, fbits(1 / Math.sqrt(hd)), nBlk, blk, 0, 0, 0], [T, nHeadKv, nBlk])
      .op('attn_merge', [bufs.P, bufs.ML, bufs.QG, bufs.O, bufs.PARAMS], [nHead, hd, nBlk, qStride, blk, 0, 0, 0], [T, nHead]);
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
    const cmd = dev.record(new OpList(pipes).op('router', [R, IDS, WTS], [nExpert, K], [T]).build(), false);
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

describe('deltanet vs a plain gated delta rule', () => {
  const softplus = (x: number) => (x > 20 ? x : Math.log(1 + Math.exp(x)));
  const silu = (x: number) => x * sigmoid(x);
  it.each([[128, 2, 4, 5], [32, 1, 2, 3], [128, 4, 4, 1]] as const)('dk %i, %i key heads, %i value heads, %i tokens', (dk, hk, hv, T) => {
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
    const cmd = dev.record(new OpList(pipes).op('deltanet', [b.U, b.Bt, b.AL, b.DT, b.A, b.S, b.O, b.Z, b.NW], [T, dk, hk, hv, convCh, fbits(eps), fbits(qScale), 0], [hv]).build(), false);
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
  });
});
