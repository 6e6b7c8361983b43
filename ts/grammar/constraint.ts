/**
 * A grammar followed token by token: the answer decoder asks it which tokens may come next (a
 * mask over the vocabulary), tells it which token came, and, when the token budget would end
 * the answer mid-document, asks for the shortest text that completes it. Masks are cached by
 * state (most states repeat: inside a string, between members), so a long answer computes few.
 */
import { maskHas } from '../engine/common.js';
import type { TokenMask } from '../engine/types.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { callStart, canEnd, docStart, stackKey, step, type CallTool, type Stack } from './matcher.js';
import type { Node } from './schema.js';
import { vocabIndex, type Trie, type VocabIndex } from './vocab.js';
import { preferredBytes } from './complete.js';

/**
 * What an answer must follow: a JSON document of a schema (or, when `tools` are given, calls of
 * them instead: a client with an output schema and tools lets the model call tools first), or
 * tool calls of declared tools only (forced, or `lazy`: the calls the model chooses to make).
 */
export type Grammar = { kind: 'json'; root: Node; tools?: CallTool[] } | {
  kind: 'call';
  tools: CallTool[];
  /** the grammar begins where the model opens a call itself (its `<tool_call>` token), not at a forced opening */
  lazy?: boolean;
};

const NO_MAX = Number.MAX_SAFE_INTEGER;

/** Masks by state key, shared by the answers of one grammar (a compiled schema reused across requests). */
class MaskCache {
  private readonly m = new Map<string, TokenMask>();
  constructor(private readonly limit: number) {}
  get(k: string): TokenMask | undefined {
    const v = this.m.get(k);
    if (v) { this.m.delete(k); this.m.set(k, v); }
    return v;
  }
  set(k: string, v: TokenMask): void {
    this.m.set(k, v);
    if (this.m.size > this.limit) this.m.delete(this.m.keys().next().value!);
  }
}
const caches = new WeakMap<VocabIndex, MaskCache>();

function popcount(bits: Uint32Array): number {
  let n = 0;
  for (let i = 0; i < bits.length; i++) { let v = bits[i]; v -= (v >>> 1) & 0x55555555; v = (v & 0x33333333) + ((v >>> 2) & 0x33333333); n += (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24; }
  return n;
}

/** Tokens allowed after `states`: the plain-character classes where they apply, the rest by trie walk. */
export function computeMask(idx: VocabIndex, states: readonly Stack[], calls = false): TokenMask {
  const bits = new Uint32Array((idx.nVocab + 31) >>> 5);
  let trie: Trie = idx.all;
  if (states.length === 1) {
    const f = states[0].f;
    if (f.t === 'str' && f.u8 === 0 && f.esc === 0 && !f.n.re && (!f.raw || f.fk === 0)) {
      const room = f.n.maxLen === NO_MAX ? Infinity : f.n.maxLen - f.len;
      bits.set((f.raw ? idx.rawPlain : idx.jsonPlain).upTo(room).bits);
      // plain characters lead back to this very state (nothing left to count): only the part of
      // each other token after its plain prefix needs walking
      const loops = f.n.maxLen === NO_MAX && f.len === f.n.minLen;
      trie = f.raw ? (loops ? idx.rawSuffix : idx.rawRest) : loops ? idx.jsonSuffix : idx.jsonRest;
    } else if (f.t === 'obj' && f.ph === 'key' && f.kp === null) {
      bits.set(idx.keyPlain.upTo(Infinity).bits);
      trie = f.ws === 1 ? idx.keySuffix : idx.keyRest;
    }
  }
  const { byte, first, next, tok, dup } = trie;
  // inside a string, most bytes lead back to the same state object: its steps are memoised, so
  // the subtree of a token that opens a string ("abc…) costs a lookup per node
  const memo = new Map<Stack, Stack[][]>();
  const stepOf = (st: readonly Stack[], c: number): Stack[] => {
    if (st.length !== 1 || st[0].f.t !== 'str') return step(st, c);
    let m = memo.get(st[0]);
    if (!m) { m = new Array(256); memo.set(st[0], m); }
    return (m[c] ??= step(st, c));
  };
  const walk = (node: number, st: readonly Stack[]) => {
    for (let ch = first[node]; ch >= 0; ch = next[ch]) {
      const ns = stepOf(st, byte[ch]);
      if (!ns.length) continue;
      const id = tok[ch];
      if (id >= 0) {
        bits[id >>> 5] |= 1 << (id & 31);
        const more = dup.get(ch);
        if (more) for (const d of more) bits[d >>> 5] |= 1 << (d & 31);
      }
      if (first[ch] >= 0) walk(ch, ns);
    }
  };
  walk(0, states);
  if (states.some(canEnd)) for (const id of idx.stopIds) bits[id >>> 5] |= 1 << (id & 31);
  if (calls) for (const id of idx.protocol) if (walkBytes(states, idx.bytes(id)).length) bits[id >>> 5] |= 1 << (id & 31);
  return { bits, count: popcount(bits) };
}

export function walkBytes(states: readonly Stack[], bytes: Uint8Array): Stack[] {
  let st = states as Stack[];
  for (let i = 0; i < bytes.length && st.length; i++) st = step(st, bytes[i]);
  return st;
}

export { maskHas };

export class Constraint {
  private states: Stack[];
  private readonly idx: VocabIndex;
  private readonly cache: MaskCache;
  private pending: { key: string; mask: TokenMask } | undefined;
  /** masks computed, and the time they took (the trace and the bench report them) */
  computed = 0;
  computeMs = 0;

  private readonly calls: boolean;

  constructor(g: Grammar, private readonly tok: Tokenizer) {
    this.calls = g.kind === 'call' || !!g.tools?.length;
    this.idx = vocabIndex(tok);
    let c = caches.get(this.idx);
    if (!c) { c = new MaskCache(1024); caches.set(this.idx, c); }
    this.cache = c;
    this.states = g.kind === 'json' ? [docStart(g.root), ...(g.tools?.length ? [callStart(g.tools)] : [])] : [callStart(g.tools)];
  }

  /** The grammar may end here (the end-of-answer token is allowed). */
  canEnd(): boolean {
    return this.states.some(canEnd);
  }

  /** Advances over a token; false (and no change) when the grammar does not allow it. */
  accept(id: number): boolean {
    if (this.idx.stopIds.includes(id)) return this.canEnd();
    const ns = walkBytes(this.states, this.tok.bytesOf(id));
    if (!ns.length) return false;
    this.states = ns;
    this.pending = undefined;
    this.stateKey = undefined;
    return true;
  }

  /** Tokens allowed next. */
  mask(): TokenMask {
    const known = this.knownMask();
    if (known) return known;
    const t0 = performance.now();
    const m = computeMask(this.idx, this.states, this.calls);
    this.computeMs += performance.now() - t0;
    this.computed++;
    this.cache.set(this.key(), m);
    this.pending = { key: this.key(), mask: m };
    return m;
  }

  /** The next tokens' mask when it is at hand (computed or cached), without computing it. */
  knownMask(): TokenMask | undefined {
    const key = this.key();
    if (this.pending?.key === key) return this.pending.mask;
    const m = this.cache.get(key);
    if (m) this.pending = { key, mask: m };
    return m;
  }

  private stateKey: string | undefined;

  private key(): string {
    return (this.stateKey ??= this.states.length === 1 ? stackKey(this.states[0]) : this.states.map(stackKey).sort().join('#'));
  }

  /**
   * The shortest text that completes the grammar from here, as tokens (a half-written character
   * first finished byte by byte); [] when it can end already.
   */
  completion(): number[] {
    if (this.canEnd()) return [];
    const out: number[] = [];
    let st = this.states;
    for (let guard = 0; guard < 100_000 && !st.some(canEnd); guard++) {
      let moved = false;
      for (const c of preferredBytes(st)) {
        const ns = step(st, c);
        if (ns.length) { st = ns; out.push(c); moved = true; break; }
      }
      if (!moved) return [];
    }
    const bytes = Uint8Array.from(out);
    // a leading run of continuation bytes (the rest of a character) goes as single-byte tokens
    let i = 0;
    const ids: number[] = [];
    while (i < bytes.length && bytes[i] >= 0x80 && bytes[i] < 0xc0) ids.push(this.idx.byteToken[bytes[i++]]);
    const rest = new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(i));
    return [...ids, ...this.tok.encode(rest)];
  }
}
