/**
 * The regular-expression subset JSON Schema `pattern` and `format` need, as an automaton over
 * code points: literals, escapes (\d \w \s and their negations, \uXXXX), `.`, classes, groups,
 * alternation, the greedy and lazy quantifiers, ^ and $ at the ends. Patterns match anywhere
 * (ECMA-262 search) unless anchored. States that cannot reach a match are dropped, so a
 * decoder following the automaton is never led into a dead end. Built lazily as a DFA over
 * NFA state sets: a string constraint's state is one integer.
 */

type Range = [number, number];
type Ast =
  | { t: 'set'; r: Range[] }
  | { t: 'cat'; xs: Ast[] }
  | { t: 'alt'; xs: Ast[] }
  | { t: 'rep'; x: Ast; min: number; max: number };

const MAX_CP = 0x10ffff;
const DIGIT: Range[] = [[48, 57]];
const WORD: Range[] = [[48, 57], [65, 90], [95, 95], [97, 122]];
const SPACE: Range[] = [[9, 13], [32, 32], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a], [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff]];
const ALL: Range[] = [[0, MAX_CP]];
const NOT_NL: Range[] = [[0, 9], [11, 12], [14, 0x2027], [0x202a, MAX_CP]];

function norm(r: Range[]): Range[] {
  const s = r.filter(([a, b]) => a <= b).sort((x, y) => x[0] - y[0]);
  const out: Range[] = [];
  for (const [a, b] of s) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

function negate(r: Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [a, b] of norm(r)) { if (a > next) out.push([next, a - 1]); next = b + 1; }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return out;
}

class Parser {
  i = 0;
  constructor(readonly s: string) {}
  fail(why: string): never { throw new Error(`${why} at offset ${this.i}`); }
  peek(): string | undefined { return this.s[this.i]; }

  alt(): Ast {
    const xs = [this.cat()];
    while (this.peek() === '|') { this.i++; xs.push(this.cat()); }
    return xs.length === 1 ? xs[0] : { t: 'alt', xs };
  }

  cat(): Ast {
    const xs: Ast[] = [];
    while (this.i < this.s.length && this.peek() !== '|' && this.peek() !== ')') xs.push(this.quant(this.atom()));
    return { t: 'cat', xs };
  }

  quant(x: Ast): Ast {
    for (;;) {
      const c = this.peek();
      let min: number, max: number;
      if (c === '*') { min = 0; max = Infinity; this.i++; }
      else if (c === '+') { min = 1; max = Infinity; this.i++; }
      else if (c === '?') { min = 0; max = 1; this.i++; }
      else if (c === '{' && /^\{\d+(,\d*)?\}/.test(this.s.slice(this.i))) {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.s.slice(this.i))!;
        this.i += m[0].length;
        min = +m[1]; max = m[2] === undefined ? min : m[3] === '' ? Infinity : +m[3];
        if (max < min) this.fail('a {n,m} quantifier with m < n');
        if (min > 1000 || (max !== Infinity && max > 1000)) this.fail('a repetition count over 1000');
      } else return x;
      if (this.peek() === '?') this.i++; // lazy: the same language
      if (this.peek() === '+') this.fail('possessive quantifiers are not supported');
      x = { t: 'rep', x, min, max };
    }
  }

  atom(): Ast {
    const c = this.s[this.i++];
    switch (c) {
      case '(': {
        if (this.peek() === '?') {
          if (this.s.startsWith('?:', this.i)) this.i += 2;
          else this.fail('lookaround and named groups are not supported');
        }
        const x = this.alt();
        if (this.s[this.i++] !== ')') this.fail('an unclosed group');
        return x;
      }
      case '[': return { t: 'set', r: this.cls() };
      case '.': return { t: 'set', r: NOT_NL };
      case '\\': return { t: 'set', r: this.escape(false) };
      case '^': case '$': this.fail(`an anchor "${c}" inside the pattern is not supported (only at its ends)`);
      // eslint-disable-next-line no-fallthrough
      case ')': this.fail('an unmatched ")"');
      // eslint-disable-next-line no-fallthrough
      case '*': case '+': case '?': this.fail(`nothing to repeat before "${c}"`);
      // eslint-disable-next-line no-fallthrough
      default: {
        const cp = this.s.codePointAt(this.i - 1)!;
        if (cp > 0xffff) this.i++;
        return { t: 'set', r: [[cp, cp]] };
      }
    }
  }

  escape(inClass: boolean): Range[] {
    const c = this.s[this.i++];
    if (c === undefined) this.fail('a trailing backslash');
    switch (c) {
      case 'd': return DIGIT;
      case 'D': return negate(DIGIT);
      case 'w': return WORD;
      case 'W': return negate(WORD);
      case 's': return SPACE;
      case 'S': return negate(SPACE);
      case 'n': return [[10, 10]];
      case 'r': return [[13, 13]];
      case 't': return [[9, 9]];
      case 'f': return [[12, 12]];
      case 'v': return [[11, 11]];
      case '0': return [[0, 0]];
      case 'b': if (inClass) return [[8, 8]]; this.fail('word boundaries (\\b) are not supported');
      // eslint-disable-next-line no-fallthrough
      case 'B': this.fail('word boundaries (\\B) are not supported');
      // eslint-disable-next-line no-fallthrough
      case 'u': return this.hex(4);
      case 'x': return this.hex(2);
      default:
        if (/[1-9]/.test(c)) this.fail('back-references are not supported');
        if (/[a-zA-Z]/.test(c)) this.fail(`the escape \\${c} is not supported`);
        return [[c.charCodeAt(0), c.charCodeAt(0)]];
    }
  }

  /** \u or \x: `digits` hex digits, one code point */
  hex(digits: number): Range[] {
    const m = new RegExp(`^[0-9a-fA-F]{${digits}}`).exec(this.s.slice(this.i));
    if (!m) this.fail(`a \\${this.s[this.i - 1]} escape without ${digits === 4 ? 'four' : 'two'} hex digits`);
    this.i += digits;
    const v = parseInt(m[0], 16);
    return [[v, v]];
  }

  cls(): Range[] {
    let neg = false;
    if (this.peek() === '^') { neg = true; this.i++; }
    const out: Range[] = [];
    let first = true;
    for (;;) {
      if (this.i >= this.s.length) this.fail('an unclosed [');
      if (this.peek() === ']' && !first) { this.i++; break; }
      first = false;
      const one = (): Range[] => {
        if (this.peek() === '\\') { this.i++; return this.escape(true); }
        const cp = this.s.codePointAt(this.i)!;
        this.i += cp > 0xffff ? 2 : 1;
        return [[cp, cp]];
      };
      const a = one();
      if (this.peek() === '-' && this.s[this.i + 1] !== ']' && this.i + 1 < this.s.length && a.length === 1 && a[0][0] === a[0][1]) {
        this.i++;
        const b = one();
        if (b.length !== 1 || b[0][0] !== b[0][1]) this.fail('a class range ending in a class escape');
        if (b[0][0] < a[0][0]) this.fail('a class range out of order');
        out.push([a[0][0], b[0][0]]);
      } else out.push(...a);
    }
    return neg ? negate(out) : norm(out);
  }
}

/** NFA: per state, its epsilon moves and its character moves (ranges → target). */
interface Nfa {
  eps: number[][];
  moves: { r: Range[]; to: number }[][];
  start: number;
  accept: number;
}

function build(ast: Ast): Nfa {
  const eps: number[][] = [], moves: { r: Range[]; to: number }[][] = [];
  const state = () => { eps.push([]); moves.push([]); return eps.length - 1; };
  let budget = 20000;
  const frag = (a: Ast): [number, number] => {
    if (--budget < 0) throw new Error('the pattern expands to over 20000 states');
    const s = state();
    switch (a.t) {
      case 'set': { const e = state(); moves[s].push({ r: a.r, to: e }); return [s, e]; }
      case 'cat': {
        let cur = s;
        for (const x of a.xs) { const [xs, xe] = frag(x); eps[cur].push(xs); cur = xe; }
        return [s, cur];
      }
      case 'alt': {
        const e = state();
        for (const x of a.xs) { const [xs, xe] = frag(x); eps[s].push(xs); eps[xe].push(e); }
        return [s, e];
      }
      case 'rep': {
        let cur = s;
        for (let i = 0; i < a.min; i++) { const [xs, xe] = frag(a.x); eps[cur].push(xs); cur = xe; }
        if (a.max === Infinity) {
          const [xs, xe] = frag(a.x);
          eps[cur].push(xs); eps[xe].push(cur);
          return [s, cur];
        }
        const e = state();
        eps[cur].push(e);
        for (let i = a.min; i < a.max; i++) { const [xs, xe] = frag(a.x); eps[cur].push(xs); eps[xe].push(e); cur = xe; }
        return [s, e];
      }
    }
  };
  const [start, accept] = frag(ast);
  return { eps, moves, start, accept };
}

function inRanges(r: Range[], cp: number): boolean {
  for (const [a, b] of r) { if (cp < a) return false; if (cp <= b) return true; }
  return false;
}

/** A compiled pattern: DFA states as integers (0 the start), built on demand. */
export class Regex {
  private readonly live: Uint8Array;
  private readonly sets: number[][] = [];
  private readonly ids = new Map<string, number>();
  private readonly trans: Map<number, number>[] = [];
  private readonly dists: number[] = [];

  constructor(readonly source: string, private readonly nfa: Nfa) {
    // states from which the accept state is reachable
    const n = nfa.eps.length, rev: number[][] = Array.from({ length: n }, () => []);
    nfa.eps.forEach((es, s) => es.forEach((t) => rev[t].push(s)));
    nfa.moves.forEach((ms, s) => ms.forEach((m) => rev[m.to].push(s)));
    this.live = new Uint8Array(n);
    const stack = [nfa.accept];
    this.live[nfa.accept] = 1;
    while (stack.length) for (const p of rev[stack.pop()!]) if (!this.live[p]) { this.live[p] = 1; stack.push(p); }
    if (!this.live[nfa.start]) throw new Error('the pattern matches nothing');
    this.intern(this.closure([nfa.start]));
  }

  private closure(seed: number[]): number[] {
    const seen = new Set<number>(), stack = [...seed];
    while (stack.length) {
      const s = stack.pop()!;
      if (seen.has(s) || !this.live[s]) continue;
      seen.add(s);
      for (const t of this.nfa.eps[s]) stack.push(t);
    }
    return [...seen].sort((a, b) => a - b);
  }

  private intern(set: number[]): number {
    if (!set.length) return -1;
    const k = set.join(',');
    let id = this.ids.get(k);
    if (id === undefined) { id = this.sets.length; this.sets.push(set); this.ids.set(k, id); this.trans.push(new Map()); }
    return id;
  }

  /** The state after code point cp, or -1 when no match can follow. */
  step(state: number, cp: number): number {
    const t = this.trans[state];
    let n = t.get(cp);
    if (n === undefined) {
      const next: number[] = [];
      for (const s of this.sets[state]) for (const m of this.nfa.moves[s]) if (inRanges(m.r, cp)) next.push(m.to);
      n = this.intern(this.closure(next));
      if (t.size < 4096) t.set(cp, n);
    }
    return n;
  }

  /** Some code point in [lo, hi] leads on (a half-read UTF-8 character is worth continuing). */
  allowsRange(state: number, lo: number, hi: number): boolean {
    for (const s of this.sets[state]) for (const m of this.nfa.moves[s]) {
      if (!this.live[m.to]) continue;
      for (const [a, b] of m.r) if (a <= hi && b >= lo) return true;
    }
    return false;
  }

  accepts(state: number): boolean {
    return this.sets[state].includes(this.nfa.accept);
  }

  /**
   * The shortest continuation to a match from `state`, as code points chosen by `pick` from the
   * ranges allowed (a JSON string's completion prefers printable characters).
   */
  shortest(state: number, pick: (r: Range[]) => number | undefined): number[] {
    const prev = new Map<number, [number, number]>([[state, [-1, -1]]]);
    const queue = [state];
    for (let qi = 0; qi < queue.length && qi < 5000; qi++) {
      const s = queue[qi];
      if (this.accepts(s)) {
        const out: number[] = [];
        for (let cur = s; cur !== state;) { const [p, cp] = prev.get(cur)!; out.push(cp); cur = p; }
        return out.reverse();
      }
      const tried = new Set<number>();
      for (const ns of this.sets[s]) for (const m of this.nfa.moves[ns]) {
        const cp = pick(m.r);
        if (cp === undefined || tried.has(cp)) continue;
        tried.add(cp);
        const n = this.step(s, cp);
        if (n >= 0 && !prev.has(n)) { prev.set(n, [s, cp]); queue.push(n); }
      }
    }
    return [];
  }

  /** Characters in the shortest completion (cached per state). */
  distance(state: number, pick: (r: Range[]) => number | undefined): number {
    let d = this.dists[state];
    if (d === undefined) { d = this.accepts(state) ? 0 : this.shortest(state, pick).length || 1e9; this.dists[state] = d; }
    return d;
  }
}

export type { Range };

/** Compiles a JSON Schema pattern (ECMA-262 subset above); throws on what it cannot follow. */
export function compileRegex(src: string): Regex {
  let body = src;
  const anchoredStart = body.startsWith('^');
  if (anchoredStart) body = body.slice(1);
  const anchoredEnd = body.endsWith('$') && !body.endsWith('\\$');
  if (anchoredEnd) body = body.slice(0, -1);
  const p = new Parser(body);
  const ast = p.alt();
  if (p.i < body.length) p.fail('an unmatched ")"');
  const any: Ast = { t: 'rep', x: { t: 'set', r: ALL }, min: 0, max: Infinity };
  const full: Ast = { t: 'cat', xs: [...(anchoredStart ? [] : [any]), ast, ...(anchoredEnd ? [] : [any])] };
  return new Regex(src, build(full));
}

const DATE = '\\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|02-(0[1-9]|1\\d|2[0-8]))';
const TIME = '([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,9})?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)';
const OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const FORMATS: Record<string, string> = {
  'date': `^${DATE}$`,
  'time': `^${TIME}$`,
  'date-time': `^${DATE}T${TIME}$`,
  'uuid': '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  'email': '^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63})*\\.[A-Za-z]{2,24}$',
  'ipv4': `^(${OCTET}\\.){3}${OCTET}$`,
  'uri': '^[A-Za-z][A-Za-z0-9+.-]{0,31}://[A-Za-z0-9\\-._~:/?#@!$&\'()*+,;=%]+$',
};
const formatCache = new Map<string, Regex>();

/** The `format`s generated (each as the subset of its RFC form given above); undefined when not supported. */
export function formatRegex(name: string): Regex | undefined {
  const src = FORMATS[name];
  if (!src) return undefined;
  let r = formatCache.get(name);
  if (!r) { r = compileRegex(src); formatCache.set(name, r); }
  return r;
}

export const SUPPORTED_FORMATS = Object.keys(FORMATS);
