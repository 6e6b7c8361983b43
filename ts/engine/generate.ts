/**
 * The decode loop, the one the CLI (one-shot and chat) and the server share: choose a token
 * (sampled, or fed by the caller), report it, feed it back, stop on a stop token, the budget, the
 * caller's word or an abort. With a drafter (speculative decoding) a token is fed together with
 * the drafts that follow it in one draft step, and the drafts the loop would have chosen itself,
 * step by step under the same rules, are taken without steps of their own.
 */
import { AbortError, maskHas } from './common.js';
import { backOff, type Drafter } from './draft/drafter.js';
import type { SampleOptions, Session, TokenLogprob, TokenMask } from './types.js';

/** Speculative decoding (greedy and sampled steps). */
export interface DraftOptions {
  drafter: Drafter;
  /** most drafts a step verifies (the session's draftRows − 1 at most) */
  max: number;
  /**
   * runs the draft step: evaluates `tokens`, asks `decide` how many of them to keep given each
   * row's greedy next token, keeps them (default: the session's evalDraft and keepDraft; the
   * server's executor runs the three as one turn at the model)
   */
  verify?: (tokens: number[], decide: (greedy: (number | undefined)[]) => number) => Promise<void>;
  /** whether drafting is allowed now (the server: only while one session decodes) */
  enabled?: () => boolean;
  /** each draft step: drafts proposed, accepted */
  onStep?: (proposed: number, accepted: number) => void;
}

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
  /**
   * speculative decoding: used for steps that are greedy, without log-probabilities, per-step
   * logits or a gate; drafts never hold a stop token
   */
  draft?: DraftOptions;
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
  const sampling = (step: number) => (typeof o.sampling === 'function' ? o.sampling(step) : o.sampling);
  // a step's forced token asked for during a draft step's walk (o.next is called once a step)
  let asked: Asked | undefined;
  // drafting pauses after rejected drafts (so a drafter that guesses badly costs little)
  let misses = 0, draftFrom = 0;
  const canDraft = o.draft && o.logprobsTopK === undefined && !o.onLogits && !o.gate && s.draftRows > 1;
  let stop: GenerateResult['stop'] = 'length';
  for (let step = 0; step < o.maxTokens; step++) {
    if (o.gate) await o.gate();
    if (o.signal?.aborted) { stop = 'abort'; break; }
    const mine = asked?.step === step ? asked : undefined;
    const forced = mine ? mine.forced : o.next?.(step);
    asked = undefined;
    // a sampled step whose token a draft step's walk drew already (its draft was not it)
    const id = forced ?? mine?.drawn ?? s.sample(sampling(step), o.mask?.(step));
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
      // drafts for the steps after this one, when they would be greedy
      const d = o.draft;
      const room = Math.min(d?.max ?? 0, s.draftRows - 1, o.maxTokens - step - 1, s.ctx - s.tokens.length - 1);
      let drafts = canDraft && !last && step >= draftFrom && room > 0 && (d!.enabled?.() ?? true) ? await d!.drafter.propose(s.tokens, id, room) : [];
      const stopAt = drafts.findIndex((t) => o.stopIds?.has(t));
      if (stopAt >= 0) drafts = drafts.slice(0, stopAt);
      let ended: GenerateResult['stop'] | undefined;
      try {
        if (drafts.length) {
          const w = await draftStep(s, o, { step, id, drafts, out, feed, sampling });
          asked = w.asked;
          ended = w.ended;
          o.draft!.onStep?.(drafts.length, w.taken.length);
          if (w.taken.length === 0) { misses++; draftFrom = step + 1 + backOff(misses); } else misses = 0;
          await o.onFed?.(id);
          for (const t of w.taken) await o.onFed?.(t);
          // every step emitted one token: the walk's steps are done (the loop goes on after them)
          step = out.length - 1;
        } else {
          const mask = o.nextMask?.();
          const pending = o.feedToken ? o.feedToken(id, mask) : s.eval([id], { onLogits: o.onLogits, signal: o.signal, mask });
          if (o.whileFeeding) {
            // one turn of the event loop first: a feed that yields before it submits (an abortable
            // eval, the server's shared step) has the GPU running by then
            await new Promise<void>((r) => setImmediate(r));
            try { o.whileFeeding(); } catch (e) { await pending.catch(() => undefined); throw e; }
          }
          await pending;
          await o.onFed?.(id);
        }
      } catch (e) {
        // an abort between sampling and feeding back ends the generation, keeping what was sampled
        if (e instanceof AbortError) { stop = 'abort'; break; }
        throw e;
      }
      if (ended) { stop = ended; break; }
    }
    // with a signal, give the event loop a turn so Ctrl+C / client disconnects can arrive
    if (o.signal) await new Promise<void>((r) => setImmediate(r));
    if (isStop) { stop = 'eos'; break; }
    if (more === false) { stop = 'callback'; break; }
  }
  return { tokens: out, stop, decodeMs: performance.now() - t0 };
}

/**
 * A step's forced token, asked for during a draft step's walk (o.next is called once a step), or
 * its sampled token, drawn there from the draft step's row (each step draws once).
 */
interface Asked { step: number; forced: number | undefined; drawn?: number }

interface DraftWalk {
  step: number; id: number; drafts: number[]; out: number[];
  feed: NonNullable<GenerateOptions['feed']>;
  sampling: (step: number) => SampleOptions;
}

/**
 * One draft step: `id` and its drafts evaluated together. The walk: step j's token is what the
 * loop would choose (forced; the greedy row under the step's mask; or, at a temperature, drawn
 * from the row as the loop's sample() would draw it, with the same random stream); a draft equal
 * to it is taken (emitted through onToken, pushed to `out`, fed), the first other one ends it.
 * Each row's logits are its decode step's, and each step draws once, in order: the tokens are the
 * ones decoding one token a step gives, sampled ones too (the same seed, the same text). Returns
 * the taken drafts, why the generation ends inside the run (if it does), and the token already
 * asked for or drawn for the step after the run.
 */
async function draftStep(s: Session, o: GenerateOptions, w: DraftWalk): Promise<{ taken: number[]; ended?: GenerateResult['stop']; asked?: Asked }> {
  const { step, drafts, out, feed, sampling } = w;
  const taken: number[] = [];
  let ended: GenerateResult['stop'] | undefined;
  let asked: Asked | undefined;
  const decide = (greedy: (number | undefined)[]): number => {
    for (let i = 0; i < drafts.length && !ended; i++) {
      const j = step + 1 + i;
      if (o.signal?.aborted) break;
      const f = o.next?.(j);
      asked = { step: j, forced: f };
      let t: number | undefined = f;
      if (t === undefined) {
        const m = o.mask?.(j), sj = sampling(j);
        if (sj.temperature > 0) {
          t = s.sampleDraftRow(i, sj, m);
          asked.drawn = t;
        } else {
          t = greedy[i];
          if (t !== undefined && m && !maskHas(m, t)) t = undefined;
        }
      }
      if (t !== drafts[i]) break;
      asked = undefined;
      out.push(t);
      const more = o.onToken?.(t, j);
      const lastJ = more === false || j + 1 === o.maxTokens;
      if (more === false) ended = 'callback';
      else if (lastJ) ended = 'length';
      // a token that is not fed ends the run without entering the session
      if (!(feed === 'all' || feed === 'non-stop' || !lastJ)) break;
      taken.push(t);
    }
    return 1 + taken.length;
  };
  const verify: NonNullable<DraftOptions['verify']> = o.draft!.verify ?? (async (tokens, pick) => { const g = await s.evalDraft(tokens); await s.keepDraft(pick(g)); });
  await verify([w.id, ...drafts], decide);
  return { taken, ended, asked };
}
