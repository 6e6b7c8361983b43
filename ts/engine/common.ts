/** Backend-independent pieces of a session: KV type names, prefix logic, log-probabilities. */
import { GgmlType } from '../gguf/index.js';
import type { KvType, TokenLogprob, TokenMask } from './types.js';

export const KV_TYPE_IDS: Record<KvType, number> = { f32: GgmlType.F32, f16: GgmlType.F16, q8_0: GgmlType.Q8_0, q4_0: GgmlType.Q4_0 };
export const KV_TYPE_NAMES = Object.keys(KV_TYPE_IDS) as KvType[];

export function kvTypeOf(id: number): KvType {
  const n = KV_TYPE_NAMES.find((k) => KV_TYPE_IDS[k] === id);
  if (!n) throw new Error(`unknown KV type id ${id}`);
  return n;
}

/** The model layer index of the i-th full-attention layer (payloads list attention layers only). */
export function attentionLayer(shape: { nLayer: number; recurrent: boolean[] }, i: number): number {
  let seen = -1;
  for (let l = 0; l < shape.nLayer; l++) if (!shape.recurrent[l] && ++seen === i) return l;
  throw new RangeError(`no attention layer ${i}`);
}

export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * How many of `tokens` a session holding `held` keeps when it syncs to them: all of them when it
 * holds exactly them, else the common prefix but at most tokens.length − 1 (the last token must be
 * evaluated to have its logits). Session.sync and the server's executor both rewind to this.
 */
export function syncKeep(held: readonly number[], tokens: readonly number[]): number {
  const L = commonPrefix(held, tokens);
  if (L === tokens.length && L === held.length) return L;
  return Math.min(L, tokens.length - 1);
}

/** Top-k of the log-softmax of logits (ties: lower id first). */
export function topLogprobs(logits: Float32Array, k: number): TokenLogprob[] {
  let mx = -Infinity;
  for (const v of logits) if (v > mx) mx = v;
  let s = 0;
  for (const v of logits) s += Math.exp(v - mx);
  const lse = mx + Math.log(s);
  const top: number[] = [];
  for (let i = 0; i < logits.length; i++) {
    if (top.length < k) { top.push(i); top.sort((a, b) => logits[b] - logits[a] || a - b); continue; }
    if (logits[i] > logits[top[k - 1]]) {
      top[k - 1] = i;
      for (let j = k - 1; j > 0 && (logits[top[j]] > logits[top[j - 1]]); j--) [top[j], top[j - 1]] = [top[j - 1], top[j]];
    }
  }
  return top.map((id) => ({ id, logprob: logits[id] - lse }));
}

/** Thrown by eval when its AbortSignal fires; the session keeps the tokens evaluated so far. */
export class AbortError extends Error {
  constructor() {
    super('aborted');
    this.name = 'AbortError';
  }
}

/** Whether a grammar mask allows token `id`. */
export const maskHas = (m: TokenMask, id: number): boolean => ((m.bits[id >>> 5] >>> (id & 31)) & 1) === 1;

/** The index of the first maximum (the WASM sampler's greedy rule): NaN never wins; 0 when nothing beats −∞. */
export function firstMax(vals: ArrayLike<number>): number {
  let best = -1, bv = -Infinity;
  for (let i = 0; i < vals.length; i++) if (vals[i] > bv) { best = i; bv = vals[i]; }
  return best >= 0 ? best : 0;
}
