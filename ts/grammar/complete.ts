/**
 * Which byte brings a grammar state nearest its end: the shortest completion is built by
 * taking, at each step, the first preferred byte the grammar accepts (close what can be
 * closed, the shortest required names and values, the smallest number in range). Used when the
 * token budget would cut a constrained answer mid-document.
 */
import { CALL_OPEN, FN_CHOICES, done, isSeen, latin1, type Frame, type Stack } from './matcher.js';
import type { Node } from './schema.js';

const c = (s: string) => s.charCodeAt(0);
const DIGITS = '0123456789'.split('').map(c);
const ALNUM = [...'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'].map(c);
/** printable ASCII but the backslash (an escape begun for nothing can lead nowhere), then newline */
const FALLBACK = [...Array.from({ length: 95 }, (_, i) => 0x20 + i).filter((x) => x !== 0x5c), 0x0a];

/** The bytes that open a value of `n`, shortest first. */
function opens(n: Node, seen = new Set<Node>()): number[] {
  if (seen.has(n)) return [];
  seen.add(n);
  switch (n.k) {
    case 'obj': return [c('{')];
    case 'arr': return [c('[')];
    case 'str': return [c('"')];
    case 'num': return [...DIGITS, c('-')];
    case 'lit': return [...n.values].sort((a, b) => a.length - b.length).map((v) => v[0]);
    case 'alt': {
      // the alternative with the shortest value first: literals and numbers, then strings, then containers
      const rank = (a: Node) => (a.k === 'lit' ? 0 : a.k === 'num' ? 1 : a.k === 'str' ? 2 : a.k === 'arr' ? 3 : 4);
      return [...n.alts].sort((a, b) => rank(a) - rank(b)).flatMap((a) => opens(a, seen));
    }
  }
}

function frameBytes(f: Frame, up: Stack | null): number[] {
  switch (f.t) {
    case 'doc': return f.ph === 0 ? opens(f.root) : [];
    case 'obj': {
      const n = f.n;
      const missing = n.names.findIndex((_, i) => n.required[i] && !isSeen(f.seen, i));
      const needMore = missing >= 0 || f.cnt < n.minP;
      switch (f.ph) {
        case 'open': return needMore ? [c('"')] : [c('}')];
        case 'after': return needMore ? [c(',')] : [c('}')];
        case 'comma': return [c('"')];
        case 'colon': return [c(':')];
        case 'val0': return opens(f.pi >= 0 ? n.props[f.pi] : n.extra!);
        case 'key': {
          if (f.kp === null) return [c('"'), c('k')];
          // the next byte of a required name (else any unused one) that the prefix begins
          const order = [...n.enc.keys()].sort((a, b) => Number(n.required[b]) - Number(n.required[a]) || n.enc[a].length - n.enc[b].length);
          for (const i of order) {
            const e = n.enc[i];
            if (isSeen(f.seen, i) || e.length < f.kp.length) continue;
            let ok = true;
            for (let j = 0; j < f.kp.length; j++) if (e[j] !== f.kp.charCodeAt(j)) { ok = false; break; }
            if (ok) return e.length === f.kp.length ? [c('"')] : [e[f.kp.length]];
          }
          return [c('"'), c('k')];
        }
        default: return [];
      }
    }
    case 'arr': {
      const item = f.cnt < f.n.prefix.length ? f.n.prefix[f.cnt] : f.n.items;
      if (f.ph === 'open') return f.cnt >= f.n.min ? [c(']')] : item ? opens(item) : [];
      if (f.ph === 'after') return f.cnt >= f.n.min ? [c(']')] : [c(',')];
      if (f.ph === 'val0') return item ? opens(item) : [];
      return [];
    }
    case 'str': {
      if (f.u8 > 0) return Array.from({ length: f.hi - f.lo + 1 }, (_, i) => f.lo + i);
      if (f.esc === 1) return [c('n'), c('"')];
      if (f.esc >= 2) return [...DIGITS, c('a')];
      const close = f.raw ? [0x0a] : [c('"')];
      if (f.n.re) {
        // towards the pattern's nearest match; past it (minLength not reached) any character it keeps
        const cps = f.n.re.shortest(f.re, pick);
        if (cps.length === 0) return [...close, ...ALNUM];
        const s = f.raw ? String.fromCodePoint(cps[0]) : JSON.stringify(String.fromCodePoint(cps[0])).slice(1, -1);
        return [new TextEncoder().encode(s)[0], ...close, ...ALNUM];
      }
      return [...close, c('a')];
    }
    case 'num': {
      const after = done(up);
      return [...(after ? frameBytes(after.f, after.up) : []), ...DIGITS, c('.')];
    }
    case 'lit': {
      const alive = [...f.cands].sort((a, b) => f.n.values[a].length - f.n.values[b].length);
      const out: number[] = [];
      const after = f.raw ? null : done(up);
      if (alive.some((i) => f.n.values[i].length === f.off)) out.push(...(f.raw ? [0x0a] : after ? frameBytes(after.f, after.up) : []));
      for (const i of alive) if (f.n.values[i].length > f.off) out.push(f.n.values[i][f.off]);
      return out;
    }
    case 'seq': return [f.s[f.off]];
    case 'call': {
      switch (f.ph) {
        case 'open': return [CALL_OPEN[f.off]];
        case 'after': return [];
        case 'name': {
          const nm = f.names.find((x) => latin1(x).startsWith(f.kp));
          return nm ? (nm.length === f.kp.length ? [c('>')] : [nm[f.kp.length]]) : [];
        }
        case 'fn': return [FN_CHOICES[f.alive & 2 ? 1 : 0][f.off]];
        case 'key': {
          const t = f.tools[f.fn], p = t.params;
          const order = [...p.names.keys()].sort((a, b) => Number(p.required[b]) - Number(p.required[a]));
          for (const i of order) {
            const nm = t.keys[i];
            if (isSeen(f.seen, i) || !nm.startsWith(f.kp)) continue;
            return nm.length === f.kp.length ? [c('>')] : [nm.charCodeAt(f.kp.length)];
          }
          return [];
        }
        case 'val': {
          const t = f.tools[f.fn];
          const node = t.params.props[f.pi];
          return t.raw[f.pi] ? [0x0a, c('a')] : opens(node);
        }
      }
    }
  }
}

/** A printable character from the ranges (the shortest completion's choice inside a pattern). */
function pick(r: [number, number][]): number | undefined {
  for (const [a, b] of r) {
    const lo = Math.max(a, 0x20);
    if (lo <= b && !(lo >= 0xd800 && lo <= 0xdfff)) return lo === 0x22 || lo === 0x5c ? (lo + 1 <= b ? lo + 1 : lo) : lo;
  }
  return r.length ? r[0][0] : undefined;
}

/** Bytes to try next, best first, for any of the states. */
export function preferredBytes(states: readonly Stack[]): number[] {
  const out: number[] = [];
  for (const s of states) out.push(...frameBytes(s.f, s.up));
  return [...out, ...FALLBACK];
}
