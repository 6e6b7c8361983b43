/**
 * Op-level checks of the attention and router shaders against plain JS statements of the math
 * (the KV rows go through the WASM quantizers and dequantizers, the CPU engine's reference):
 * attn_flash + attn_merge over several blocks, GQA, decode and prefill shapes, every cache type;
 * router top-k with ties.
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
