/**
 * Vulkan against the CPU reference on one model: all-position logits after prefills of several
 * lengths, a decode continuation fed the same tokens on both sides, and snapshots (payloads) moved
 * across backends mid-sequence. Both engines must use the same KV types, so that the only
 * differences left are the backends' summation orders. Used by the geometry sweep (test and
 * scripts/check/geometry-sweep.ts) and the mixed-type model test.
 */
import type { Engine, Session } from '../../ts/engine/index.js';
import { Rng } from '../../ts/model/synth.js';

export interface CompareOptions {
  /** prompt lengths to prefill (each from an empty session) */
  prefills: number[];
  /** decode steps after the longest prefill (tokens fed one at a time) */
  decode: number;
  /** token ids are drawn from [0, vocab) */
  vocab: number;
  seed?: number;
}

export interface CompareResult {
  what: string;
  positions: number;
  /** per position: max over the vocabulary of |vulkan − cpu| */
  max: number;
  p99: number;
  /** share of positions above the tolerance */
  above: number;
}

/** The oracle tolerance (shared/oracle README): p99 over positions ≤ 1e-2, ≤ 1% of positions above. */
export const TOLERANCE = 1e-2;

function summarize(what: string, errs: number[]): CompareResult {
  const s = errs.slice().sort((a, b) => a - b);
  return { what, positions: s.length, max: s[s.length - 1] ?? 0, p99: s[Math.floor(0.99 * (s.length - 1))] ?? 0, above: s.filter((x) => x > TOLERANCE).length / Math.max(1, s.length) };
}

export function passes(r: CompareResult): boolean {
  return r.p99 <= TOLERANCE && r.above <= 0.01;
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) { const d = Math.abs(a[i] - b[i]); if (!(d <= m)) m = d; }
  return m; // NaN on either side counts as a failure (NaN > tolerance is false: kept as NaN)
}

/** All-position logits of `tokens` evaluated in one eval (the engine chunks it as it would a prompt). */
async function allLogits(s: Session, tokens: number[]): Promise<Float32Array[]> {
  const rows: Float32Array[] = [];
  await s.eval(tokens, { onLogits: (row) => rows.push(row.slice()) });
  return rows;
}

export async function compareBackends(cpu: Engine, vk: Engine, o: CompareOptions): Promise<CompareResult[]> {
  const rng = new Rng(o.seed ?? 1);
  const longest = Math.max(...o.prefills);
  const tokens = Array.from({ length: longest + o.decode }, () => rng.int(0, o.vocab - 1));
  const out: CompareResult[] = [];
  for (const n of o.prefills) {
    const c = cpu.newSession(), v = vk.newSession();
    const [a, b] = [await allLogits(c, tokens.slice(0, n)), await allLogits(v, tokens.slice(0, n))];
    out.push(summarize(`prefill ${n}`, a.map((row, i) => (b[i] ? maxDiff(row, b[i]) : Infinity))));
    if (n === longest) {
      // decode: the same tokens one at a time on both (the continuation of the longest prompt)
      const errs: number[] = [];
      for (let k = 0; k < o.decode; k++) {
        const t = tokens[n + k];
        await c.eval([t]); await v.eval([t]);
        errs.push(maxDiff(c.logits(), v.logits()));
      }
      out.push(summarize(`decode ${o.decode} after ${n}`, errs));
      // snapshots: each backend's state continued on the other, against the CPU's own continuation
      const tail = tokens.slice(0, Math.min(8, tokens.length));
      const vOnC = cpu.newSession(), cOnV = vk.newSession();
      vOnC.loadPayload(v.savePayload());
      cOnV.loadPayload(c.savePayload());
      await vOnC.eval(tail); await cOnV.eval(tail);
      const c2 = cpu.newSession();
      c2.loadPayload(c.savePayload());
      await c2.eval(tail);
      out.push(summarize('vulkan payload continued on cpu', [maxDiff(c2.logits(), vOnC.logits())]));
      out.push(summarize('cpu payload continued on vulkan', [maxDiff(c2.logits(), cOnV.logits())]));
      for (const s of [vOnC, cOnV, c2]) s.dispose();
    }
    c.dispose(); v.dispose();
  }
  return out;
}
