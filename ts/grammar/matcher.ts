/**
 * The byte-level recogniser under constrained decoding: which bytes may come next, given a
 * grammar and the bytes so far. A state is a persistent stack of frames (one per open JSON
 * value, object, array, string, tool call); a set of such stacks stands for the choices not yet
 * decided (anyOf, a number that may go on or end). step() never mutates: the mask computation
 * branches from one state into every token of the vocabulary.
 *
 * Two grammars share the frames: a JSON document for a schema (response_format), and Qwen's
 * native tool call (<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…)
 * whose names come from the declared tools and whose values follow each parameter's schema.
 */
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../chat/template-tokens.js';
import type { Node } from './schema.js';

/** Whitespace bytes allowed in one gap between JSON tokens (bounded: a model cannot stall in it). */
export const WS_GAP = 16;
/** before the document (the "\n\n" after a think block) and after it */
const WS_PRE = 4, WS_POST = 2;
/** digits a number may have (every value stays a finite double: e±99 at most) */
const INT_DIGITS = 15, FRAC_DIGITS = 15, EXP_DIGITS = 2;

type ObjN = Node & { k: 'obj' };
type ArrN = Node & { k: 'arr' };
type StrN = Node & { k: 'str' };
type NumN = Node & { k: 'num' };
type LitN = Node & { k: 'lit' };

/** A declared tool for the call grammar: its name and its parameters' object schema. */
export interface CallTool {
  name: string;
  params: ObjN;
  /** the parameter names as the matcher compares them (their UTF-8 bytes, one char per byte) */
  keys: string[];
  /** per parameter: its value is raw text (a string-typed parameter) rather than JSON */
  raw: boolean[];
}

export type Frame =
  | { t: 'doc'; root: Node; ph: 0 | 1 | 2; ws: number }
  | { t: 'obj'; n: ObjN; ph: 'open' | 'key' | 'colon' | 'val0' | 'val' | 'after' | 'comma'; seen: string; cnt: number; pi: number; kp: string | null; ws: number }
  | { t: 'arr'; n: ArrN; ph: 'open' | 'val0' | 'val' | 'after'; cnt: number; ws: number }
  | { t: 'str'; n: StrN; len: number; esc: number; cp: number; u8: number; lo: number; hi: number; re: number; raw: boolean; fk: number }
  | { t: 'num'; n: NumN; ph: number; txt: string }
  | { t: 'lit'; n: LitN; cands: number[]; off: number; raw: boolean; fk: number }
  | { t: 'seq'; s: Uint8Array; off: number }
  | { t: 'call'; tools: CallTool[]; names: Uint8Array[]; ph: 'open' | 'name' | 'fn' | 'key' | 'val' | 'after'; off: number; kp: string; fn: number; seen: string; pi: number; alive: number; calls: number };

export interface Stack {
  readonly f: Frame;
  readonly up: Stack | null;
}

const te = new TextEncoder();
const b = (s: string) => te.encode(s);
const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/** Tool-call protocol text, spelled once (the tags from the chat template's names). */
export const CALL_OPEN = b(`${TOOL_CALL_OPEN}\n<function=`);
const CALL_NEXT = b(`\n${TOOL_CALL_OPEN}\n<function=`);
export const FN_CHOICES = [b('<parameter='), b(`</function>\n${TOOL_CALL_CLOSE}`)];
const PARAM_END = b('</parameter>');
const PARAM_TAIL_JSON = b('\n</parameter>\n');
const NL = b('\n');

const push = (f: Frame, up: Stack | null): Stack => ({ f, up });

/** Frames as cache keys (every field that changes what may follow). */
const ids = new WeakMap<object, number>();
let nextId = 1;
export function idOf(o: object): number {
  let v = ids.get(o);
  if (v === undefined) { v = nextId++; ids.set(o, v); }
  return v;
}

export function frameKey(f: Frame): string {
  switch (f.t) {
    case 'doc': return `d${idOf(f.root)}.${f.ph}.${f.ws}`;
    case 'obj': return `o${idOf(f.n)}.${f.ph}.${f.seen}.${f.cnt}.${f.pi}.${f.kp ?? '*'}.${f.ws}`;
    case 'arr': return `a${idOf(f.n)}.${f.ph}.${f.cnt}.${f.ws}`;
    case 'str': return `s${idOf(f.n)}.${f.len}.${f.esc}.${f.cp}.${f.u8}.${f.lo}.${f.re}.${f.raw ? 1 : 0}.${f.fk}`;
    case 'num': return `n${idOf(f.n)}.${f.ph}.${f.txt}`;
    case 'lit': return `l${idOf(f.n)}.${f.cands.join(',')}.${f.off}.${f.raw ? 1 : 0}.${f.fk}`;
    case 'seq': return `q${idOf(f.s)}.${f.off}`;
    case 'call': return `c${idOf(f.tools)}.${f.ph}.${f.off}.${f.kp}.${f.fn}.${f.seen}.${f.pi}.${f.alive}.${f.calls}`;
  }
}

export function stackKey(s: Stack | null): string {
  let k = '';
  for (let c = s; c; c = c.up) k += frameKey(c.f) + '|';
  return k;
}

/** The start of a JSON document for a schema. */
export function docStart(root: Node): Stack {
  return push({ t: 'doc', root, ph: 0, ws: 0 }, null);
}

/** The start of a tool call (the bytes from `<tool_call>` on), one of `tools`. */
export function callStart(tools: CallTool[]): Stack {
  return push({ t: 'call', tools, names: tools.map((t) => b(t.name)), ph: 'open', off: 0, kp: '', fn: -1, seen: '', pi: -1, alive: 1, calls: 0 }, null);
}

// ---- "</parameter>" inside a raw value: a KMP automaton over its bytes (the value may not contain it)
const KMP = (() => {
  const p = PARAM_END, fail = new Int32Array(p.length + 1);
  fail[0] = -1;
  for (let i = 1, k = -1; i <= p.length; i++) {
    while (k >= 0 && p[k] !== p[i - 1]) k = fail[k];
    fail[i] = ++k;
  }
  return (state: number, c: number): number => {
    let k = state;
    while (k >= 0 && p[k] !== c) k = fail[k];
    return k + 1;
  };
})();

/** A value finished: the frame below moves on. */
export function done(up: Stack | null): Stack | null {
  if (!up) return null;
  const f = up.f;
  switch (f.t) {
    case 'doc': return push({ ...f, ph: 2, ws: 0 }, up.up);
    case 'obj': return push({ ...f, ph: 'after', seen: f.pi >= 0 ? setSeen(f.seen, f.pi) : f.seen, cnt: f.cnt + 1, pi: -1, ws: 0 }, up.up);
    case 'arr': return push({ ...f, ph: 'after', cnt: f.cnt + 1, ws: 0 }, up.up);
    case 'call': {
      if (f.ph !== 'val') return null;
      const tool = f.tools[f.fn];
      // a JSON value ends with "\n</parameter>\n"; a raw value consumed "\n</parameter>" already
      const tail = tool.raw[f.pi] ? NL : PARAM_TAIL_JSON;
      const after: Frame = { ...f, ph: 'fn', off: 0, alive: fnChoices(f, setSeen(f.seen, f.pi)), seen: setSeen(f.seen, f.pi), pi: -1 };
      return push({ t: 'seq', s: tail, off: 0 }, push(after, up.up));
    }
    case 'seq': return null;
    default: return null;
  }
}

function setSeen(seen: string, i: number): string {
  const p = seen.length > i ? seen : seen.padEnd(i + 1, '0');
  return p.slice(0, i) + '1' + p.slice(i + 1);
}
/** member or parameter i is in a frame's `seen` ('1' at its index) */
export const isSeen = (seen: string, i: number) => seen.charCodeAt(i) === 0x31;

function requiredDone(n: ObjN, seen: string): boolean {
  let c = 0;
  for (let i = 0; i < n.names.length; i++) if (n.required[i] && isSeen(seen, i)) c++;
  return c === n.nRequired;
}

function moreAllowed(n: ObjN, seen: string, cnt: number): boolean {
  if (cnt >= n.maxP) return false;
  if (n.extra) return true;
  for (let i = 0; i < n.names.length; i++) if (!isSeen(seen, i)) return true;
  return false;
}

/** Which of the "<parameter=" / "</function>…" choices are open after `seen`. */
function fnChoices(f: Frame & { t: 'call' }, seen: string): number {
  const p = f.tools[f.fn].params;
  return (moreAllowed(p, seen, countSeen(seen)) ? 1 : 0) | (requiredDone(p, seen) ? 2 : 0);
}
const countSeen = (s: string) => { let c = 0; for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 0x31) c++; return c; };

/** A value of `n` starts with byte c: push its frame(s) onto `up`. */
function begin(n: Node, c: number, up: Stack | null, out: Stack[]): void {
  switch (n.k) {
    case 'alt': for (const a of n.alts) begin(a, c, up, out); return;
    case 'obj': if (c === 0x7b) out.push(push({ t: 'obj', n, ph: 'open', seen: '', cnt: 0, pi: -1, kp: null, ws: 0 }, up)); return;
    case 'arr': if (c === 0x5b) out.push(push({ t: 'arr', n, ph: 'open', cnt: 0, ws: 0 }, up)); return;
    case 'str':
      if (c === 0x22) out.push(push({ t: 'str', n, len: 0, esc: 0, cp: 0, u8: 0, lo: 0, hi: 0, re: 0, raw: false, fk: 0 }, up));
      return;
    case 'num':
      if (c === 0x2d) { const f: Frame = { t: 'num', n, ph: 1, txt: '-' }; if (numOk(f)) out.push(push(f, up)); }
      else if (isDigit(c)) { const f: Frame = { t: 'num', n, ph: c === 0x30 ? 2 : 3, txt: String.fromCharCode(c) }; if (numOk(f)) out.push(push(f, up)); }
      return;
    case 'lit': {
      const cands: number[] = [];
      n.values.forEach((v, i) => { if (v[0] === c) cands.push(i); });
      if (cands.length) out.push(push({ t: 'lit', n, cands, off: 1, raw: false, fk: 0 }, up));
      return;
    }
  }
}

/** Raw values (tool parameters of string type) take a string node's constraints or enum of strings. */
function beginRaw(n: Node, c: number, up: Stack, out: Stack[]): void {
  if (n.k === 'lit') {
    // raw enum values: the strings themselves, not their JSON spelling
    const raws = rawLit(n);
    const cands: number[] = [];
    raws.values.forEach((v, i) => { if (v[0] === c) cands.push(i); });
    if (cands.length && KMP(0, c) < PARAM_END.length) out.push(push({ t: 'lit', n: raws, cands, off: 1, raw: true, fk: KMP(0, c) }, up));
    // an empty enum value ends at once
    if (raws.values.some((v) => v.length === 0) && c === 0x0a) out.push(push({ t: 'seq', s: PARAM_END, off: 0 }, up));
    return;
  }
  if (n.k === 'alt') { for (const a of n.alts) beginRaw(a, c, up, out); return; }
  if (n.k === 'str') {
    const f: Frame = { t: 'str', n, len: 0, esc: 0, cp: 0, u8: 0, lo: 0, hi: 0, re: 0, raw: true, fk: 0 };
    stepFrame(push(f, up), c, out);
  }
}
const rawLits = new WeakMap<LitN, LitN>();
function rawLit(n: LitN): LitN {
  let r = rawLits.get(n);
  if (!r) {
    const td = new TextDecoder();
    r = { k: 'lit', values: n.values.map((v) => { const j = JSON.parse(td.decode(v)); return typeof j === 'string' ? te.encode(j) : v; }) };
    rawLits.set(n, r);
  }
  return r;
}

const bounded = (n: NumN) => n.lo !== -Infinity || n.hi !== Infinity || n.int;

/** A number prefix (txt, phase) that some in-range value still extends. */
function numOk(f: Frame & { t: 'num' }): boolean {
  const n = f.n;
  if (n.lo === -Infinity && n.hi === Infinity) return true;
  const t = f.txt;
  const neg = t.startsWith('-');
  const body = neg ? t.slice(1) : t;
  const fits = (v: number) => (n.loEx ? v > n.lo : v >= n.lo) && (n.hiEx ? v < n.hi : v <= n.hi) && (!n.int || Number.isInteger(v));
  // intervals of values this prefix can still become ([a, b], sign applied at the end)
  const iv: [number, number][] = [];
  if (body === '') iv.push([0, Infinity]);
  else if (!body.includes('.')) {
    const d = Number(body);
    iv.push([d, d]);
    if (!n.int) iv.push([d, d + 1]);
    if (body !== '0') for (let k = 1; body.length + k <= INT_DIGITS; k++) { const p = 10 ** k; iv.push([d * p, (d + 1) * p - 1]); if (!n.int) iv[iv.length - 1][1] = (d + 1) * p; }
  } else {
    const frac = body.split('.')[1];
    const d = Number(body.endsWith('.') ? body.slice(0, -1) : body);
    iv.push(frac.length >= FRAC_DIGITS ? [d, d] : [d, d + 10 ** -frac.length]);
  }
  for (const [a0, b0] of iv) {
    const a = neg ? -b0 : a0, bb = neg ? -a0 : b0;
    if (bb < n.lo || a > n.hi) continue;
    if (n.int) {
      const lo = Math.max(a, n.loEx ? Math.floor(n.lo) + 1 : Math.ceil(n.lo)), hi = Math.min(bb, n.hiEx ? Math.ceil(n.hi) - 1 : Math.floor(n.hi));
      if (lo > hi) continue;
      // an integer prefix reaches only the integers it spells: check one exists in range
      if (a === bb && !fits(a)) continue;
      return true;
    }
    if (a === bb && !fits(a)) continue;
    if ((n.loEx ? bb > n.lo : bb >= n.lo) && (n.hiEx ? a < n.hi : a <= n.hi)) return true;
  }
  return false;
}

/** The number so far is a complete value (and in range). */
function numComplete(f: Frame & { t: 'num' }): boolean {
  if (f.ph !== 2 && f.ph !== 3 && f.ph !== 5 && f.ph !== 8) return false;
  const n = f.n;
  if (!bounded(n)) return true;
  const v = Number(f.txt);
  return (n.loEx ? v > n.lo : v >= n.lo) && (n.hiEx ? v < n.hi : v <= n.hi) && (!n.int || Number.isInteger(v));
}

/** Number phases: 1 after '-', 2 int "0", 3 int digits, 4 after '.', 5 frac, 6 after e, 7 after e sign, 8 exp digits. */
function stepNum(f: Frame & { t: 'num' }, c: number, up: Stack | null, out: Stack[]): void {
  const n = f.n, next = (ph: number) => { const g: Frame = { t: 'num', n, ph, txt: f.txt + String.fromCharCode(c) }; if (numOk(g)) out.push(push(g, up)); };
  // digits in the current run (integer part, fraction or exponent)
  let run = 0;
  for (let i = f.txt.length - 1; i >= 0 && isDigit(f.txt.charCodeAt(i)); i--) run++;
  const exp = (c === 0x65 || c === 0x45) && !bounded(n);
  switch (f.ph) {
    case 1: if (c === 0x30) next(2); else if (isDigit(c)) next(3); break;
    case 2: if (c === 0x2e && !n.int) next(4); else if (exp) next(6); break;
    case 3:
      if (isDigit(c) && run < INT_DIGITS) next(3);
      else if (c === 0x2e && !n.int) next(4);
      else if (exp) next(6);
      break;
    case 4: if (isDigit(c)) next(5); break;
    case 5:
      if (isDigit(c) && run < FRAC_DIGITS) next(5);
      else if (exp) next(6);
      break;
    case 6: if (c === 0x2b || c === 0x2d) next(7); else if (isDigit(c)) next(8); break;
    case 7: if (isDigit(c)) next(8); break;
    case 8: if (isDigit(c) && run < EXP_DIGITS) next(8); break;
  }
  // a complete number may also end here: the byte belongs to what follows it
  if (numComplete(f)) { const d = done(up); if (d) stepStack(d, c, out); }
}

/** One code point entered a string: its length and pattern move on. */
function strChar(f: Frame & { t: 'str' }, cp: number, up: Stack | null, out: Stack[], fk: number, self?: Stack): void {
  const n = f.n;
  if (f.len >= n.maxLen) return;
  let re = f.re;
  if (n.re) { re = n.re.step(re, cp); if (re < 0) return; }
  // an unbounded string's length only matters up to minLength: capped there, the state repeats
  const len = n.maxLen === Number.MAX_SAFE_INTEGER ? Math.min(f.len + 1, n.minLen) : f.len + 1;
  // a state that repeats is the same object: the mask's walk memoises steps by state identity
  if (self && len === f.len && re === f.re && fk === f.fk && f.esc === 0 && f.u8 === 0) { out.push(self); return; }
  out.push(push({ ...f, len, esc: 0, cp: 0, u8: 0, lo: 0, hi: 0, re, fk }, up));
}

function strEnds(f: Frame & { t: 'str' }): boolean {
  return f.len >= f.n.minLen && (!f.n.re || f.n.re.accepts(f.re)) && f.u8 === 0 && f.esc === 0;
}

/** UTF-8 lead byte: continuation count and the first continuation's range (RFC 3629). */
export function utf8Lead(c: number): [number, number, number] | null {
  if (c >= 0xc2 && c <= 0xdf) return [1, 0x80, 0xbf];
  if (c === 0xe0) return [2, 0xa0, 0xbf];
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return [2, 0x80, 0xbf];
  if (c === 0xed) return [2, 0x80, 0x9f];
  if (c === 0xf0) return [3, 0x90, 0xbf];
  if (c >= 0xf1 && c <= 0xf3) return [3, 0x80, 0xbf];
  if (c === 0xf4) return [3, 0x80, 0x8f];
  return null;
}

/** the smallest code point of a UTF-8 sequence of 1 + k bytes */
const MIN_CP = [0, 0x80, 0x800, 0x10000];

/** A character begun (its high bits `cp`, `rest` continuation bytes to come) the string can still take: its length, its pattern. */
function charRoom(f: Frame & { t: 'str' }, cp: number, rest: number, min: number): boolean {
  if (f.len >= f.n.maxLen) return false;
  if (!f.n.re) return true;
  const lo = cp << (6 * rest);
  return f.n.re.allowsRange(f.re, Math.max(min, lo), lo | ((1 << (6 * rest)) - 1));
}

function stepStr(f: Frame & { t: 'str' }, c: number, up: Stack | null, out: Stack[], self: Stack): void {
  const fk = f.raw ? KMP(f.fk, c) : 0;
  if (f.raw && fk >= PARAM_END.length) return;
  if (f.esc === 1) {
    const map: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 8, 0x66: 12, 0x6e: 10, 0x72: 13, 0x74: 9 };
    if (c === 0x75) out.push(push({ ...f, esc: 2, cp: 0 }, up));
    else if (map[c] !== undefined) strChar(f, map[c], up, out, 0);
    return;
  }
  if (f.esc >= 2) {
    const h = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
    if (h < 0) return;
    const cp = (f.cp << 4) | h;
    if (f.esc === 5) { if (cp < 0xd800 || cp > 0xdfff) strChar(f, cp, up, out, 0); }
    else {
      const rest = 4 * (5 - f.esc);
      if (!f.n.re || f.n.re.allowsRange(f.re, cp << rest, (cp << rest) | ((1 << rest) - 1))) out.push(push({ ...f, esc: f.esc + 1, cp }, up));
    }
    return;
  }
  if (f.u8 > 0) {
    if (c < f.lo || c > f.hi) return;
    const cp = (f.cp << 6) | (c & 0x3f);
    if (f.u8 === 1) strChar(f, cp, up, out, fk);
    else if (charRoom(f, cp, f.u8 - 1, 0)) out.push(push({ ...f, cp, u8: f.u8 - 1, lo: 0x80, hi: 0xbf, fk }, up));
    return;
  }
  if (c >= 0x80) {
    const l = utf8Lead(c);
    if (!l) return;
    const bits = l[0] === 1 ? c & 0x1f : l[0] === 2 ? c & 0x0f : c & 0x07;
    if (charRoom(f, bits, l[0], MIN_CP[l[0]])) out.push(push({ ...f, cp: bits, u8: l[0], lo: l[1], hi: l[2], fk }, up));
    return;
  }
  if (f.raw) {
    // a raw value ends at "\n</parameter>": the newline may begin it (when the value may end here)
    if (c === 0x0a && strEnds(f)) out.push(push({ t: 'seq', s: PARAM_END, off: 0 }, up));
    strChar(f, c, up, out, fk, self);
    return;
  }
  if (c === 0x22) { if (strEnds(f)) { const d = done(up); if (d) out.push(d); } return; }
  if (c === 0x5c) { if (f.len < f.n.maxLen && (!f.n.re || f.n.re.allowsRange(f.re, 0, 0xffff))) out.push(push({ ...f, esc: 1 }, up)); return; }
  if (c < 0x20) return;
  strChar(f, c, up, out, 0, self);
}

function stepLit(f: Frame & { t: 'lit' }, c: number, up: Stack | null, out: Stack[]): void {
  const vals = f.n.values;
  const fk = f.raw ? KMP(f.fk, c) : 0;
  const cands = f.raw && fk >= PARAM_END.length ? [] : f.cands.filter((i) => vals[i].length > f.off && vals[i][f.off] === c);
  if (cands.length) out.push(push({ ...f, cands, off: f.off + 1, fk }, up));
  if (f.cands.some((i) => vals[i].length === f.off)) {
    if (f.raw) { if (c === 0x0a) out.push(push({ t: 'seq', s: PARAM_END, off: 0 }, up)); }
    else { const d = done(up); if (d) stepStack(d, c, out); }
  }
}

function stepObj(f: Frame & { t: 'obj' }, c: number, up: Stack | null, out: Stack[], self: Stack): void {
  const n = f.n;
  const ws = () => { if (isWs(c) && f.ws < WS_GAP) out.push(push({ ...f, ws: f.ws + 1 }, up)); };
  const close = () => { if (c === 0x7d && requiredDone(n, f.seen) && f.cnt >= n.minP) { const d = done(up); if (d) out.push(d); } };
  switch (f.ph) {
    case 'open':
      ws(); close();
      if (c === 0x22 && moreAllowed(n, f.seen, f.cnt)) out.push(push({ ...f, ph: 'key', kp: '', ws: 0 }, up));
      return;
    case 'comma':
      ws();
      if (c === 0x22) out.push(push({ ...f, ph: 'key', kp: '', ws: 0 }, up));
      return;
    case 'key': {
      if (c === 0x22) {
        // the key is complete: a declared name not yet used, else an extra member
        if (f.kp !== null) {
          const i = n.enc.findIndex((e) => e.length === f.kp!.length && latin1(e) === f.kp);
          if (i >= 0) { if (!isSeen(f.seen, i)) out.push(push({ ...f, ph: 'colon', pi: i, kp: null, ws: 0 }, up)); return; }
          if (n.extra && f.kp.length > 0) out.push(push({ ...f, ph: 'colon', pi: -1, kp: null, ws: 0 }, up));
          return;
        }
        if (n.extra && f.ws > 0) out.push(push({ ...f, ph: 'colon', pi: -1, kp: null, ws: 0 }, up));
        return;
      }
      if (f.kp !== null) {
        const kp = f.kp + String.fromCharCode(c);
        const under = keyPrefixes(n).get(kp);
        const declared = under !== undefined && under.some((i) => !isSeen(f.seen, i));
        if (declared || (n.extra && under !== undefined)) { out.push(push({ ...f, kp }, up)); return; }
        // past every declared name: an extra member's key (plain characters, its length in ws)
        if (n.extra && freeKeyByte(c)) out.push(push({ ...f, kp: null, ws: Math.min(kp.length, 1) }, up));
        return;
      }
      if (n.extra && freeKeyByte(c)) out.push(f.ws === 1 ? self : push({ ...f, ws: 1 }, up));
      return;
    }
    case 'colon':
      ws();
      if (c === 0x3a) out.push(push({ ...f, ph: 'val0', ws: 0 }, up));
      return;
    case 'val0':
      ws();
      begin(f.pi >= 0 ? n.props[f.pi] : n.extra!, c, push({ ...f, ph: 'val', ws: 0 }, up), out);
      return;
    case 'after':
      ws(); close();
      if (c === 0x2c && moreAllowed(n, f.seen, f.cnt)) out.push(push({ ...f, ph: 'comma', ws: 0 }, up));
      return;
    case 'val':
      return;
  }
}

/** Per object schema: each prefix of its members' encoded names → the members it begins (built on first use). */
const prefixIndex = new WeakMap<ObjN, Map<string, number[]>>();
function keyPrefixes(n: ObjN): Map<string, number[]> {
  let m = prefixIndex.get(n);
  if (!m) {
    m = new Map();
    n.enc.forEach((e, i) => { const s = latin1(e); for (let k = 1; k <= s.length; k++) { const p = s.slice(0, k); const l = m!.get(p); if (l) l.push(i); else m!.set(p, [i]); } });
    prefixIndex.set(n, m);
  }
  return m;
}

/** Bytes of an extra member's key: printable ASCII but the quote and backslash. */
const freeKeyByte = (c: number) => c >= 0x20 && c !== 0x22 && c !== 0x5c && c < 0x80;
const latinCache = new WeakMap<Uint8Array, string>();
/** Bytes as a string of one char per byte (how the matcher compares names), cached per array. */
export function latin1(e: Uint8Array): string {
  let s = latinCache.get(e);
  if (s === undefined) { s = String.fromCharCode(...e); latinCache.set(e, s); }
  return s;
}

function stepArr(f: Frame & { t: 'arr' }, c: number, up: Stack | null, out: Stack[]): void {
  const n = f.n;
  const item = () => (f.cnt < n.prefix.length ? n.prefix[f.cnt] : n.items);
  const ws = () => { if (isWs(c) && f.ws < WS_GAP) out.push(push({ ...f, ws: f.ws + 1 }, up)); };
  const close = () => { if (c === 0x5d && f.cnt >= n.min) { const d = done(up); if (d) out.push(d); } };
  switch (f.ph) {
    case 'open': {
      ws(); close();
      const it = item();
      if (it && f.cnt < n.max) begin(it, c, push({ ...f, ph: 'val', ws: 0 }, up), out);
      return;
    }
    case 'val0': {
      ws();
      const it = item();
      if (it) begin(it, c, push({ ...f, ph: 'val', ws: 0 }, up), out);
      return;
    }
    case 'after':
      ws(); close();
      if (c === 0x2c && f.cnt < n.max && item()) out.push(push({ ...f, ph: 'val0', ws: 0 }, up));
      return;
    case 'val':
      return;
  }
}

function stepCall(f: Frame & { t: 'call' }, c: number, up: Stack | null, out: Stack[]): void {
  switch (f.ph) {
    case 'open':
      if (CALL_OPEN[f.off] !== c) return;
      out.push(push(f.off + 1 === CALL_OPEN.length ? { ...f, ph: 'name', off: 0, kp: '' } : { ...f, off: f.off + 1 }, up));
      return;
    case 'after': {
      if (CALL_NEXT[f.off] !== c) return;
      out.push(push(f.off + 1 === CALL_NEXT.length ? { ...f, ph: 'name', off: 0, kp: '' } : { ...f, off: f.off + 1 }, up));
      return;
    }
    case 'name': {
      if (c === 0x3e) {
        const fn = f.names.findIndex((nm) => latin1(nm) === f.kp);
        if (fn < 0) return;
        const g: Frame = { ...f, ph: 'fn', off: 0, fn, kp: '', seen: '', pi: -1, alive: 0 };
        out.push(push({ t: 'seq', s: NL, off: 0 }, push({ ...g, alive: fnChoices(g, '') }, up)));
        return;
      }
      const kp = f.kp + String.fromCharCode(c);
      if (f.names.some((nm) => latin1(nm).startsWith(kp))) out.push(push({ ...f, kp }, up));
      return;
    }
    case 'fn': {
      let alive = 0;
      FN_CHOICES.forEach((s, i) => { if (f.alive & (1 << i) && s[f.off] === c) alive |= 1 << i; });
      if (!alive) return;
      const off = f.off + 1;
      if (alive & 1 && off === FN_CHOICES[0].length) { out.push(push({ ...f, ph: 'key', off: 0, kp: '', alive: 0 }, up)); return; }
      if (alive & 2 && off === FN_CHOICES[1].length) {
        // one call complete: another may follow, or the answer ends
        out.push(push({ ...f, ph: 'after', off: 0, fn: -1, seen: '', pi: -1, alive: 0, calls: f.calls + 1 }, up));
        return;
      }
      out.push(push({ ...f, off, alive }, up));
      return;
    }
    case 'key': {
      const p = f.tools[f.fn].params;
      if (c === 0x3e) {
        const i = f.tools[f.fn].keys.findIndex((nm) => nm === f.kp);
        if (i >= 0 && !isSeen(f.seen, i)) out.push(push({ t: 'seq', s: NL, off: 0 }, push({ ...f, ph: 'val', pi: i, kp: '' }, up)));
        return;
      }
      const kp = f.kp + String.fromCharCode(c);
      if (f.tools[f.fn].keys.some((nm, i) => !isSeen(f.seen, i) && nm.startsWith(kp))) out.push(push({ ...f, kp }, up));
      return;
    }
    case 'val':
      return;
  }
}

/** After the "\n" that follows `<parameter=KEY>`: the value's first byte. */
function beginParam(call: Stack, c: number, out: Stack[]): void {
  const f = call.f as Frame & { t: 'call' };
  const tool = f.tools[f.fn];
  const node = tool.params.props[f.pi];
  if (tool.raw[f.pi]) beginRaw(node, c, call, out);
  else begin(node, c, call, out);
}

function stepSeq(f: Frame & { t: 'seq' }, c: number, up: Stack | null, out: Stack[]): void {
  if (f.s[f.off] !== c) return;
  if (f.off + 1 < f.s.length) { out.push(push({ ...f, off: f.off + 1 }, up)); return; }
  // the literal is complete: the frame below moves on
  if (up && up.f.t === 'call' && up.f.ph === 'val' && f.s === PARAM_END) { const d = done(up); if (d) out.push(d); return; }
  if (up) out.push(up);
}

function stepDoc(f: Frame & { t: 'doc' }, c: number, up: Stack | null, out: Stack[]): void {
  if (f.ph === 0) {
    if (isWs(c) && f.ws < WS_PRE) out.push(push({ ...f, ws: f.ws + 1 }, up));
    begin(f.root, c, push({ ...f, ph: 1, ws: 0 }, up), out);
  } else if (f.ph === 2) {
    if (isWs(c) && f.ws < WS_POST) out.push(push({ ...f, ws: f.ws + 1 }, up));
  }
}

function stepFrame(s: Stack, c: number, out: Stack[]): void {
  const f = s.f, up = s.up;
  switch (f.t) {
    case 'doc': return stepDoc(f, c, up, out);
    case 'obj': return stepObj(f, c, up, out, s);
    case 'arr': return stepArr(f, c, up, out);
    case 'str': return stepStr(f, c, up, out, s);
    case 'num': return stepNum(f, c, up, out);
    case 'lit': return stepLit(f, c, up, out);
    case 'seq': return stepSeq(f, c, up, out);
    case 'call': return stepCall(f, c, up, out);
  }
}

/** Every state one byte `c` leads to from `s` (appended to `out`). */
export function stepStack(s: Stack, c: number, out: Stack[]): void {
  // a call waiting for a parameter's value: the value's first byte opens its frame
  if (s.f.t === 'call' && s.f.ph === 'val') { beginParam(s, c, out); return; }
  stepFrame(s, c, out);
}

/** States after byte c from any of `states` (duplicates removed when there are several). */
export function step(states: readonly Stack[], c: number): Stack[] {
  const out: Stack[] = [];
  for (const s of states) stepStack(s, c, out);
  if (out.length > 1) {
    const seen = new Set<string>();
    return out.filter((s) => { const k = stackKey(s); if (seen.has(k)) return false; seen.add(k); return true; });
  }
  return out;
}

/** The grammar is complete here (the end-of-answer token may come). */
export function canEnd(s: Stack): boolean {
  const f = s.f;
  switch (f.t) {
    case 'doc': return f.ph === 2;
    case 'call': return f.ph === 'after' && f.off === 0;
    case 'num': if (numComplete(f)) { const d = done(s.up); return d !== null && canEnd(d); } return false;
    case 'lit': if (!f.raw && f.cands.some((i) => f.n.values[i].length === f.off)) { const d = done(s.up); return d !== null && canEnd(d); } return false;
    default: return false;
  }
}
