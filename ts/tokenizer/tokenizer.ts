/**
 * The Qwen3.5/3.6 tokenizer, built from the GGUF arrays (tokens, merges, token_type): added tokens
 * matched first, then the qwen35 pre-tokenizer split, then byte-level BPE merges in the WASM core.
 * No normalization and no BOS (model-spec §5).
 */
import { GgufError, metaArray, metaNumber, metaString, type GgufFile } from '../gguf/index.js';
import { Core } from '../core/wasm.js';
import { BYTE_TO_UNICODE, UNICODE_TO_BYTE } from './byte-unicode.js';
import { pretokenize } from './pretokenize.js';
import { StreamDecoder } from './stream-decoder.js';

/** GGUF token types (llama.cpp `llama_token_type`). */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

interface BpeExports {
  bpeInit(ptr: number, capacity: number): void;
  bpeAddMerge(left: number, right: number, rank: number, result: number): void;
  bpeMerge(syms: number, n: number, work: number): number;
  bpeWorkBytes(n: number): number;
}

export interface EncodeOptions {
  /** match control tokens (<|im_start|> …) in the text; user-defined ones (<think>, <tool_call>) always match. Default true. */
  parseSpecial?: boolean;
}

const CACHE_LIMIT = 100_000;

export class Tokenizer {
  readonly tokens: string[];
  readonly types: Int32Array;
  readonly eosId: number;
  /** ids that end generation: <|im_end|> and <|endoftext|> when present */
  readonly stopIds: Set<number>;
  private vocab = new Map<string, number>();
  private byteSym = new Int32Array(256).fill(-1);
  private pieceBytes: (Uint8Array | undefined)[];
  private addedAll: RegExp | null;
  private addedUser: RegExp | null;
  private addedIds = new Map<string, number>();
  private cache = new Map<string, Int32Array>();
  private core = new Core();
  private bpe: BpeExports;
  private symPtr = 0;
  private workPtr = 0;
  private cap = 0;
  private enc = new TextEncoder();

  constructor(f: GgufFile) {
    const model = metaString(f, 'tokenizer.ggml.model', '');
    if (model !== 'gpt2') throw new GgufError(f.path, `tokenizer.ggml.model is "${model}", expected "gpt2" (byte-level BPE)`);
    const tokens = metaArray(f, 'tokenizer.ggml.tokens') as string[] | undefined;
    if (!tokens || typeof tokens[0] !== 'string') throw new GgufError(f.path, 'tokenizer.ggml.tokens is missing');
    const types = metaArray(f, 'tokenizer.ggml.token_type');
    const merges = (metaArray(f, 'tokenizer.ggml.merges') as string[] | undefined) ?? [];
    this.tokens = tokens;
    this.types = types ? Int32Array.from(types as ArrayLike<number>) : new Int32Array(tokens.length).fill(TokenType.NORMAL);
    if (this.types.length !== tokens.length) throw new GgufError(f.path, `tokenizer.ggml.token_type has ${this.types.length} entries, tokens ${tokens.length}`);
    tokens.forEach((t, i) => { if (!this.vocab.has(t)) this.vocab.set(t, i); });
    for (let b = 0; b < 256; b++) this.byteSym[b] = this.vocab.get(BYTE_TO_UNICODE[b]) ?? -1;
    this.pieceBytes = new Array(tokens.length);

    const special: string[] = [], user: string[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const ty = this.types[i];
      if (ty === TokenType.CONTROL || ty === TokenType.USER_DEFINED) {
        this.addedIds.set(tokens[i], i);
        (ty === TokenType.CONTROL ? special : user).push(tokens[i]);
      }
    }
    const alt = (list: string[]) => list.length
      ? new RegExp(list.sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g')
      : null;
    this.addedAll = alt([...special, ...user]);
    this.addedUser = alt(user);

    this.eosId = metaNumber(f, 'tokenizer.ggml.eos_token_id', this.vocab.get('<|im_end|>') ?? -1);
    this.stopIds = new Set([this.eosId, this.vocab.get('<|im_end|>') ?? -1, this.vocab.get('<|endoftext|>') ?? -1].filter((x) => x >= 0));

    // merge table into WASM
    this.bpe = this.core.x as unknown as BpeExports;
    let capacity = 1024;
    while (capacity < merges.length * 2) capacity *= 2;
    this.bpe.bpeInit(this.core.alloc(capacity * 16), capacity);
    merges.forEach((m, rank) => {
      const sp = m.indexOf(' ');
      const a = m.slice(0, sp), b = m.slice(sp + 1);
      const l = this.vocab.get(a), r = this.vocab.get(b), res = this.vocab.get(a + b);
      if (sp < 0 || l === undefined || r === undefined || res === undefined) throw new GgufError(f.path, `tokenizer.ggml.merges[${rank}] "${m}" names tokens that are not in the vocabulary`);
      this.bpe.bpeAddMerge(l, r, rank, res);
    });
    this.reserve(4096);
  }

  get vocabSize(): number {
    return this.tokens.length;
  }

  idOf(text: string): number | undefined {
    return this.vocab.get(text);
  }

  private reserve(n: number): void {
    if (n <= this.cap) return;
    this.cap = Math.max(n, this.cap * 2);
    this.symPtr = this.core.alloc(this.cap * 4);
    this.workPtr = this.core.alloc(this.bpe.bpeWorkBytes(this.cap));
  }

  /** BPE of one pre-token (cached). */
  private encodeWord(word: string, out: number[]): void {
    const hit = this.cache.get(word);
    if (hit) { for (const id of hit) out.push(id); return; }
    const bytes = this.enc.encode(word);
    this.reserve(bytes.length);
    const syms = this.core.i32(this.symPtr, bytes.length);
    let n = 0;
    for (const b of bytes) { const s = this.byteSym[b]; if (s >= 0) syms[n++] = s; } // a byte missing from the vocab is dropped, as HF does without unk
    const m = this.bpe.bpeMerge(this.symPtr, n, this.workPtr);
    const ids = this.core.i32(this.symPtr, m).slice();
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(word, ids);
    for (const id of ids) out.push(id);
  }

  private encodePlain(text: string, out: number[]): void {
    for (const piece of pretokenize(text)) this.encodeWord(piece, out);
  }

  encode(text: string, o: EncodeOptions = {}): number[] {
    const out: number[] = [];
    const re = o.parseSpecial === false ? this.addedUser : this.addedAll;
    if (!re) { this.encodePlain(text, out); return out; }
    re.lastIndex = 0;
    let last = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      if (m.index > last) this.encodePlain(text.slice(last, m.index), out);
      out.push(this.addedIds.get(m[0])!);
      last = m.index + m[0].length;
    }
    if (last < text.length) this.encodePlain(text.slice(last), out);
    return out;
  }

  /**
   * The tokens of `text` when a session already holds `held` (tokens standing for held.text, as
   * sampled — re-encoding them could split the same text differently): those tokens, then the
   * rest encoded; undefined when `text` does not start with held.text.
   */
  encodeAfter(held: { tokens: readonly number[]; text: string }, text: string): number[] | undefined {
    if (!text.startsWith(held.text)) return undefined;
    return [...held.tokens, ...this.encode(text.slice(held.text.length))];
  }

  /** The bytes a token stands for (added/control tokens: their text). */
  bytesOf(id: number): Uint8Array {
    if (id < 0 || id >= this.tokens.length) throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.tokens.length - 1})`);
    let b = this.pieceBytes[id];
    if (!b) {
      const t = this.tokens[id];
      const ty = this.types[id];
      if (ty === TokenType.CONTROL || ty === TokenType.USER_DEFINED || ty === TokenType.UNUSED) b = this.enc.encode(t);
      else {
        const chars = Array.from(t);
        b = new Uint8Array(chars.length);
        let ok = true;
        chars.forEach((c, i) => { const v = UNICODE_TO_BYTE.get(c); if (v === undefined) ok = false; else b![i] = v; });
        if (!ok) b = this.enc.encode(t);
      }
      this.pieceBytes[id] = b;
    }
    return b;
  }

  /** Text of the token as shown by --dump-tokens (bytes decoded leniently). */
  piece(id: number): string {
    return new TextDecoder().decode(this.bytesOf(id));
  }

  decode(ids: ArrayLike<number>): string {
    const d = this.decoder();
    let s = '';
    for (let i = 0; i < ids.length; i++) s += d.push(ids[i]);
    return s + d.end();
  }

  decoder(): StreamDecoder {
    return new StreamDecoder((id) => this.bytesOf(id));
  }

  isSpecial(id: number): boolean {
    return this.types[id] === TokenType.CONTROL;
  }
}
