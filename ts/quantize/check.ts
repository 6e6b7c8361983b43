/**
 * The quality check of a quantized model against its source: both evaluate the same text in
 * windows of `ctx` tokens (each from an empty session); per position the KL divergence
 * KL(source ‖ quantized) of the next-token distributions and whether their top-1 tokens agree.
 */
import type { Engine } from '../engine/types.js';

export interface PositionResult {
  window: number;
  position: number;
  kl: number;
  top1Source: number;
  top1Quant: number;
}

export interface CheckSummary {
  positions: number;
  windows: number;
  meanKl: number;
  medianKl: number;
  p99Kl: number;
  maxKl: number;
  /** share of positions whose top-1 tokens agree */
  top1: number;
}

/** log-softmax in double precision */
function logSoftmax(x: Float32Array): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) if (x[i] > m) m = x[i];
  let s = 0;
  for (let i = 0; i < x.length; i++) s += Math.exp(x[i] - m);
  const l = Math.log(s) + m;
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = x[i] - l;
  return out;
}

function argmax(x: Float32Array): number {
  let b = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[b]) b = i;
  return b;
}

export function klDivergence(source: Float32Array, quant: Float32Array): number {
  const p = logSoftmax(source), q = logSoftmax(quant);
  let kl = 0;
  for (let i = 0; i < p.length; i++) { const pi = Math.exp(p[i]); if (pi > 0) kl += pi * (p[i] - q[i]); }
  return Math.max(0, kl);
}

async function windowLogits(e: Engine, tokens: number[]): Promise<Float32Array[]> {
  const s = e.newSession();
  const rows: Float32Array[] = [];
  try {
    await s.eval(tokens, { onLogits: (r) => rows.push(r.slice()) });
  } finally {
    s.dispose();
  }
  return rows;
}

export interface CheckOptions {
  source: Engine;
  quant: Engine;
  tokens: number[];
  ctx: number;
  maxWindows?: number;
  onPosition?: (r: PositionResult) => void;
  /** after each window, with that window's mean KL */
  onWindow?: (done: number, total: number, meanKl: number) => void;
}

export async function checkQuality(o: CheckOptions): Promise<CheckSummary> {
  const windows = Math.min(Math.floor(o.tokens.length / o.ctx), o.maxWindows ?? Infinity);
  if (windows < 1) throw new Error(`the text has ${o.tokens.length} tokens: fewer than one window of ${o.ctx}`);
  const kls: number[] = [];
  let agree = 0;
  for (let w = 0; w < windows; w++) {
    const toks = o.tokens.slice(w * o.ctx, (w + 1) * o.ctx);
    const a = await windowLogits(o.source, toks), b = await windowLogits(o.quant, toks);
    const first = kls.length;
    for (let i = 0; i < a.length; i++) {
      const r: PositionResult = { window: w, position: i, kl: klDivergence(a[i], b[i]), top1Source: argmax(a[i]), top1Quant: argmax(b[i]) };
      kls.push(r.kl);
      if (r.top1Source === r.top1Quant) agree++;
      o.onPosition?.(r);
    }
    o.onWindow?.(w + 1, windows, kls.slice(first).reduce((x, y) => x + y, 0) / a.length);
  }
  const s = kls.slice().sort((x, y) => x - y);
  return {
    positions: s.length, windows,
    meanKl: s.reduce((x, y) => x + y, 0) / s.length,
    medianKl: s[Math.floor((s.length - 1) / 2)],
    p99Kl: s[Math.floor(0.99 * (s.length - 1))],
    maxKl: s[s.length - 1],
    top1: agree / s.length,
  };
}
