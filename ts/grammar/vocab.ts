/**
 * The vocabulary as the mask computation walks it: a byte trie over the tokens a constrained
 * answer may contain (normal and byte tokens; control, unused and added tokens never, the
 * end-of-answer and tool-call tokens by name), plus the token classes that make the common
 * states cheap. Inside a JSON string most of the vocabulary is allowed; walking the whole trie
 * there would visit every node, so tokens made only of plain string characters are kept as a
 * precomputed set (by character count, for maxLength) and only the rest is walked.
 * Built once per tokenizer.
 */
import { TokenType, type Tokenizer } from '../tokenizer/tokenizer.js';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../chat/template-tokens.js';
import { utf8Lead } from './matcher.js';

export class Trie {
  readonly byte: Uint8Array;
  readonly first: Int32Array;
  readonly next: Int32Array;
  /** first token ending at the node (-1 none); more in `dup` chains */
  readonly tok: Int32Array;
  readonly dup: Map<number, number[]>;

  constructor(tokens: { id: number; bytes: Uint8Array }[]) {
    // byte order: one char per byte, compared as strings (native and fast)
    const keyed = tokens.map((t) => ({ t, k: String.fromCharCode.apply(null, t.bytes as unknown as number[]) }));
    keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
    tokens = keyed.map((x) => x.t);
    let cap = 1;
    for (const t of tokens) cap += t.bytes.length;
    const byte = new Uint8Array(cap), first = new Int32Array(cap).fill(-1), next = new Int32Array(cap).fill(-1), tok = new Int32Array(cap).fill(-1);
    const last = new Int32Array(cap).fill(-1);
    this.dup = new Map();
    let n = 1;
    const path: number[] = [0];
    let prev: Uint8Array = new Uint8Array(0);
    for (const { id, bytes } of tokens) {
      let common = 0;
      while (common < prev.length && common < bytes.length && prev[common] === bytes[common]) common++;
      path.length = common + 1;
      for (let i = common; i < bytes.length; i++) {
        const parent = path[i], node = n++;
        byte[node] = bytes[i];
        if (first[parent] < 0) first[parent] = node; else next[last[parent]] = node;
        last[parent] = node;
        path.push(node);
      }
      const end = path[bytes.length];
      if (tok[end] < 0) tok[end] = id;
      else { const d = this.dup.get(end) ?? []; d.push(id); this.dup.set(end, d); }
      prev = bytes;
    }
    this.byte = byte.slice(0, n); this.first = first.slice(0, n); this.next = next.slice(0, n); this.tok = tok.slice(0, n);
  }

  get nodes(): number { return this.byte.length; }
}

/**
 * The longest prefix of `bytes` made of complete UTF-8 characters (RFC 3629: no overlong form,
 * no surrogate) whose ASCII bytes pass `ok`: its length in bytes and in characters. A partial
 * character (its lead byte here, its last bytes in another token) ends it.
 */
function plainPrefix(bytes: Uint8Array, ok: (c: number) => boolean): { bytes: number; chars: number } {
  let i = 0, chars = 0;
  while (i < bytes.length) {
    const c = bytes[i];
    if (c < 0x80) { if (!ok(c)) break; i++; chars++; continue; }
    const l = utf8Lead(c);
    if (!l || i + l[0] >= bytes.length || bytes[i + 1] < l[1] || bytes[i + 1] > l[2]) break;
    let good = true;
    for (let k = 2; k <= l[0] && good; k++) good = bytes[i + k] >= 0x80 && bytes[i + k] <= 0xbf;
    if (!good) break;
    i += l[0] + 1;
    chars++;
  }
  return { bytes: i, chars };
}

/** A set of tokens with their character counts, as a bitset per count bound (0..MAXC, then all). */
export class CountedSet {
  static readonly MAXC = 24;
  /** bits[c]: tokens of at most c characters; bits[MAXC + 1]: all */
  readonly bits: Uint32Array[];
  readonly counts: Int32Array;

  constructor(nVocab: number, members: { id: number; chars: number }[]) {
    const words = (nVocab + 31) >>> 5;
    this.counts = new Int32Array(CountedSet.MAXC + 2);
    this.bits = [];
    const byCount = Array.from({ length: CountedSet.MAXC + 2 }, () => [] as number[]);
    for (const m of members) byCount[Math.min(m.chars, CountedSet.MAXC + 1)].push(m.id);
    let acc = new Uint32Array(words), n = 0;
    for (let c = 0; c <= CountedSet.MAXC + 1; c++) {
      acc = acc.slice();
      for (const id of byCount[c]) acc[id >>> 5] |= 1 << (id & 31);
      n += byCount[c].length;
      this.bits.push(acc);
      this.counts[c] = n;
    }
  }

  /** The tokens of at most `maxChars` characters. */
  upTo(maxChars: number): { bits: Uint32Array; count: number } {
    const c = maxChars > CountedSet.MAXC ? CountedSet.MAXC + 1 : Math.max(0, maxChars);
    return { bits: this.bits[c], count: this.counts[c] };
  }
}

export class VocabIndex {
  readonly nVocab: number;
  /** every token a constrained answer may use */
  readonly all: Trie;
  /** JSON string content: tokens of plain characters (not `"`, `\`, control), and the rest as a trie */
  readonly jsonPlain: CountedSet;
  readonly jsonRest: Trie;
  /**
   * the rest again, each token as what follows its plain prefix: in a string state that plain
   * characters lead back to (no pattern, no length left to count), a token fits when its suffix does
   */
  readonly jsonSuffix: Trie;
  /** raw tool-parameter text: tokens without a newline or `<`, and the rest */
  readonly rawPlain: CountedSet;
  readonly rawRest: Trie;
  readonly rawSuffix: Trie;
  /** an extra member's key: printable ASCII without `"` and `\` */
  readonly keyPlain: CountedSet;
  readonly keyRest: Trie;
  readonly keySuffix: Trie;
  readonly stopIds: number[];
  /** the `<tool_call>` and `</tool_call>` tokens, allowed where a tool call's grammar spells them */
  readonly protocol: number[];
  /** a token per single byte (forced completions of a half-written character) */
  readonly byteToken: Int32Array;
  readonly bytes: (id: number) => Uint8Array;
  readonly buildMs: number;

  constructor(tok: Tokenizer) {
    const t0 = performance.now();
    this.nVocab = tok.tokens.length;
    this.bytes = (id) => tok.bytesOf(id);
    const all: { id: number; bytes: Uint8Array }[] = [];
    const jsonP: { id: number; chars: number }[] = [], rawP: typeof jsonP = [], keyP: typeof jsonP = [];
    const jsonR: typeof all = [], rawR: typeof all = [], keyR: typeof all = [];
    const jsonS: typeof all = [], rawS: typeof all = [], keyS: typeof all = [];
    const jsonOk = (c: number) => c >= 0x20 && c !== 0x22 && c !== 0x5c, rawOk = (c: number) => c !== 0x0a && c !== 0x3c;
    const keyOk = (c: number) => c >= 0x20 && c < 0x80 && c !== 0x22 && c !== 0x5c;
    this.byteToken = new Int32Array(256).fill(-1);
    const protocol: number[] = [];
    for (let id = 0; id < this.nVocab; id++) {
      const ty = tok.types[id];
      if (ty === TokenType.USER_DEFINED && (tok.tokens[id] === TOOL_CALL_OPEN || tok.tokens[id] === TOOL_CALL_CLOSE)) protocol.push(id);
      if (ty !== TokenType.NORMAL && ty !== TokenType.BYTE) continue;
      const bytes = tok.bytesOf(id);
      if (!bytes.length) continue;
      if (bytes.length === 1 && this.byteToken[bytes[0]] < 0) this.byteToken[bytes[0]] = id;
      const e = { id, bytes };
      all.push(e);
      const j = plainPrefix(bytes, jsonOk);
      if (j.bytes === bytes.length) jsonP.push({ id, chars: j.chars }); else { jsonR.push(e); jsonS.push({ id, bytes: bytes.subarray(j.bytes) }); }
      const r = plainPrefix(bytes, rawOk);
      if (r.bytes === bytes.length) rawP.push({ id, chars: r.chars }); else { rawR.push(e); rawS.push({ id, bytes: bytes.subarray(r.bytes) }); }
      let k = 0;
      while (k < bytes.length && keyOk(bytes[k])) k++;
      if (k === bytes.length) keyP.push({ id, chars: k }); else { keyR.push(e); keyS.push({ id, bytes: bytes.subarray(k) }); }
    }
    this.protocol = protocol;
    this.all = new Trie(all);
    this.jsonPlain = new CountedSet(this.nVocab, jsonP);
    this.jsonRest = new Trie(jsonR);
    this.jsonSuffix = new Trie(jsonS);
    this.rawPlain = new CountedSet(this.nVocab, rawP);
    this.rawRest = new Trie(rawR);
    this.rawSuffix = new Trie(rawS);
    this.keyPlain = new CountedSet(this.nVocab, keyP);
    this.keyRest = new Trie(keyR);
    this.keySuffix = new Trie(keyS);
    this.stopIds = [...tok.stopIds];
    this.buildMs = performance.now() - t0;
  }
}

const indexes = new WeakMap<Tokenizer, VocabIndex>();
/** The index of a tokenizer, built on first use. */
export function vocabIndex(tok: Tokenizer): VocabIndex {
  let v = indexes.get(tok);
  if (!v) { v = new VocabIndex(tok); indexes.set(tok, v); }
  return v;
}
