/** The decode loop: sample, feed back, stop on a stop token or the token budget. */
import { AbortError } from './common.js';
import type { SampleOptions, Session, TokenLogprob } from './types.js';

export interface GenerateOptions {
  maxTokens: number;
  sampling: SampleOptions;
  stopIds?: ReadonlySet<number>;
  /** called with each generated token before it is fed back; return false to stop */
  onToken?: (id: number, step: number) => boolean | void;
  /** top-k log-probabilities of each step (k > 0) */
  logprobsTopK?: number;
  onLogprobs?: (chosen: TokenLogprob, top: TokenLogprob[]) => void;
  /** feed the last generated token back too (test vectors: one logits row per generated token) */
  feedLast?: boolean;
  onLogits?: (row: Float32Array, position: number) => void;
  signal?: AbortSignal;
}

export interface GenerateResult {
  tokens: number[];
  stop: 'eos' | 'length' | 'callback' | 'abort';
  decodeMs: number;
}

export async function generate(s: Session, o: GenerateOptions): Promise<GenerateResult> {
  const out: number[] = [];
  const t0 = performance.now();
  let stop: GenerateResult['stop'] = 'length';
  for (let step = 0; step < o.maxTokens; step++) {
    if (o.signal?.aborted) { stop = 'abort'; break; }
    const id = s.sample(o.sampling);
    if (o.logprobsTopK && o.onLogprobs) {
      const top = s.topLogprobs(Math.max(o.logprobsTopK, 1));
      // chosen token's log-probability: from the full log-softmax
      const lg = s.logits();
      let mx = -Infinity; for (const v of lg) if (v > mx) mx = v;
      let z = 0; for (const v of lg) z += Math.exp(v - mx);
      o.onLogprobs({ id, logprob: lg[id] - mx - Math.log(z) }, top.slice(0, o.logprobsTopK));
    }
    out.push(id);
    const more = o.onToken?.(id, step);
    const isStop = o.stopIds?.has(id) ?? false;
    const last = isStop || more === false || step + 1 === o.maxTokens;
    if (!last || o.feedLast) {
      try {
        await s.eval([id], { onLogits: o.onLogits, signal: o.signal });
      } catch (e) {
        // an abort between sampling and feeding back ends the generation, keeping what was sampled
        if (e instanceof AbortError) { stop = 'abort'; break; }
        throw e;
      }
    }
    // with a signal, give the event loop a turn so Ctrl+C / client disconnects can arrive
    if (o.signal) await new Promise<void>((r) => setImmediate(r));
    if (isStop) { stop = 'eos'; break; }
    if (more === false) { stop = 'callback'; break; }
  }
  return { tokens: out, stop, decodeMs: performance.now() - t0 };
}
