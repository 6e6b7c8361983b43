/**
 * The decode loop, the one the CLI (one-shot and chat) and the server share: choose a token
 * (sampled, or fed by the caller), report it, feed it back, stop on a stop token, the budget, the
 * caller's word or an abort.
 */
import { AbortError } from './common.js';
import type { SampleOptions, Session, TokenLogprob, TokenMask } from './types.js';

export interface GenerateOptions {
  maxTokens: number;
  /** fixed, or chosen per step (the server samples tool-call structure greedily) */
  sampling: SampleOptions | ((step: number) => SampleOptions);
  stopIds?: ReadonlySet<number>;
  /** the tokens a grammar allows this step (undefined: all) */
  mask?: (step: number) => TokenMask | undefined;
  /**
   * the mask of the step after the token being fed, when it is known already (a grammar's cached
   * mask): the backend applies it to its device arg-max
   */
  nextMask?: () => TokenMask | undefined;
  /**
   * called while a token is being fed (the GPU runs the step on a worker thread): work for the
   * next step that does not need its logits, such as a grammar's next mask
   */
  whileFeeding?: () => void;
  /** a token to feed instead of sampling this step (forced text: closing a think block, opening a tool call) */
  next?: (step: number) => number | undefined;
  /** called with each generated token before it is fed back; return false to stop */
  onToken?: (id: number, step: number) => boolean | void;
  /** called after a token entered the session (awaited: the server saves to disk through its executor) */
  onFed?: (id: number) => void | Promise<void>;
  /**
   * feeds a generated token instead of session.eval([id]) (the server's executor: decode steps
   * shared with other sessions)
   */
  feedToken?: (id: number, mask?: TokenMask) => Promise<void>;
  /** top-k log-probabilities of each step (k > 0) */
  logprobsTopK?: number;
  onLogprobs?: (chosen: TokenLogprob, top: TokenLogprob[]) => void;
  /**
   * which generated tokens enter the session: 'not-last' (default) leaves out the last one (its
   * logits are never needed), 'non-stop' all but a stop token (a live session that must hold
   * the whole answer: chat and server), 'all' every one (test vectors: a logits row per token)
   */
  feed?: 'not-last' | 'non-stop' | 'all';
  onLogits?: (row: Float32Array, position: number) => void;
  signal?: AbortSignal;
  /** awaited before each step (a pause: q36-eval's TUI holds generation here) */
  gate?: () => Promise<void>;
}

export interface GenerateResult {
  tokens: number[];
  stop: 'eos' | 'length' | 'callback' | 'abort';
  decodeMs: number;
}

export async function generate(s: Session, o: GenerateOptions): Promise<GenerateResult> {
  const out: number[] = [];
  const t0 = performance.now();
  const feed = o.feed ?? 'not-last';
  let stop: GenerateResult['stop'] = 'length';
  for (let step = 0; step < o.maxTokens; step++) {
    if (o.gate) await o.gate();
    if (o.signal?.aborted) { stop = 'abort'; break; }
    const forced = o.next?.(step);
    const id = forced ?? s.sample(typeof o.sampling === 'function' ? o.sampling(step) : o.sampling, o.mask?.(step));
    if (o.logprobsTopK !== undefined && o.onLogprobs) {
      const top = o.logprobsTopK > 0 ? s.topLogprobs(o.logprobsTopK) : [];
      // chosen token's log-probability: from the full log-softmax
      const lg = s.logits();
      let mx = -Infinity; for (const v of lg) if (v > mx) mx = v;
      let z = 0; for (const v of lg) z += Math.exp(v - mx);
      o.onLogprobs({ id, logprob: lg[id] - mx - Math.log(z) }, top);
    }
    out.push(id);
    const more = o.onToken?.(id, step);
    const isStop = o.stopIds?.has(id) ?? false;
    const last = isStop || more === false || step + 1 === o.maxTokens;
    const fed = feed === 'all' || (feed === 'non-stop' ? !isStop : !last);
    if (fed) {
      try {
        const mask = o.nextMask?.();
        const pending = o.feedToken ? o.feedToken(id, mask) : s.eval([id], { onLogits: o.onLogits, signal: o.signal, mask });
        if (o.whileFeeding) {
          // one turn of the event loop first: a feed that yields before it submits (an abortable
          // eval, the server's shared step) has the GPU running by then
          await new Promise<void>((r) => setImmediate(r));
          try { o.whileFeeding(); } catch (e) { await pending.catch(() => undefined); throw e; }
        }
        await pending;
      } catch (e) {
        // an abort between sampling and feeding back ends the generation, keeping what was sampled
        if (e instanceof AbortError) { stop = 'abort'; break; }
        throw e;
      }
      await o.onFed?.(id);
    }
    // with a signal, give the event loop a turn so Ctrl+C / client disconnects can arrive
    if (o.signal) await new Promise<void>((r) => setImmediate(r));
    if (isStop) { stop = 'eos'; break; }
    if (more === false) { stop = 'callback'; break; }
  }
  return { tokens: out, stop, decodeMs: performance.now() - t0 };
}
