/**
 * Final-answer extraction and grading. The answer is read from what follows the last "</think>"
 * (thinking mode: a reply whose think block never closed has no answer), preferring an explicit
 * "Answer: X" / "final answer is X" / \boxed{X}, the last one given; for letters a lone letter on
 * the last line counts too. Integers are compared canonically (leading zeros, "+", thousands
 * separators dropped; "-0" is 0).
 */
import type { AnswerFormat, Question } from './questions.js';

const THINK_CLOSE = '</think>';

/** The visible reply: after the last </think> (thinking mode), or all of it. */
export function visiblePart(text: string, thinking: boolean): string | undefined {
  const i = text.lastIndexOf(THINK_CLOSE);
  if (i >= 0) return text.slice(i + THINK_CLOSE.length);
  return thinking ? undefined : text;
}

const strip = (s: string) => s.replace(/[*_`$]/g, '').replace(/\\text\{([^}]*)\}/g, '$1');

/** The last explicit answer marker's value (raw text up to the line end), if any. */
function marked(text: string): string | undefined {
  const t = strip(text);
  const found: { at: number; v: string }[] = [];
  for (const m of t.matchAll(/\\boxed\{([^{}]*)\}/g)) found.push({ at: m.index!, v: m[1] });
  for (const m of t.matchAll(/(?:final answer|answer)\s*(?:is|:|=)\s*([^\n]*)/gi)) found.push({ at: m.index!, v: m[1] });
  found.sort((a, b) => a.at - b.at);
  return found.length ? found[found.length - 1].v.trim() : undefined;
}

/** A choice letter (A..letters), or undefined. */
export function extractLetter(text: string, letters = 10): string | undefined {
  const allowed = 'ABCDEFGHIJ'.slice(0, letters);
  const rx = new RegExp(`^\\(?([${allowed}])\\)?(?:[).:,\\s]|$)`);
  const m = marked(text);
  if (m !== undefined) {
    const x = rx.exec(m.replace(/^(?:option|choice)\s+/i, ''));
    if (x) return x[1];
  }
  // no marker: a lone letter (optionally in parentheses) on the last non-empty line
  const last = strip(text).trim().split('\n').filter((l) => l.trim()).pop()?.trim() ?? '';
  const lone = new RegExp(`^\\(?([${allowed}])\\)?\\.?$`).exec(last);
  return lone ? lone[1] : undefined;
}

/** An integer in canonical form ("007" → "7", "-0" → "0", "1,024" → "1024"), or undefined. */
export function extractInteger(text: string): string | undefined {
  const m = marked(text);
  const from = m ?? strip(text).trim().split('\n').filter((l) => l.trim()).pop();
  if (from === undefined) return undefined;
  const x = /^[^\d-+]*([-+]?\d{1,3}(?:,\d{3})+|[-+]?\d+)(?![\d.]\d)/.exec(from.replace(/^line\s+/i, ''));
  if (!x) return undefined;
  return canonicalInteger(x[1]);
}

export function canonicalInteger(s: string): string {
  const neg = s.startsWith('-');
  const digits = s.replace(/^[-+]/, '').replace(/,/g, '').replace(/^0+(?=\d)/, '');
  return neg && digits !== '0' ? `-${digits}` : digits;
}

/** The answer a reply gives for a question of this format, or undefined (no answer). */
/**
 * Characters of a reply's end the extractors read: the answer is its last marker, and bounding
 * the text bounds the regular expressions' work (a 480 KB line of unclosed `\text{` took 39 s).
 */
export const EXTRACT_TAIL = 32_000;

export function extractAnswer(format: AnswerFormat, reply: string, thinking: boolean, letters?: number): string | undefined {
  let v = visiblePart(reply, thinking);
  if (v === undefined) return undefined;
  if (v.length > EXTRACT_TAIL) v = v.slice(-EXTRACT_TAIL);
  return format === 'letter' ? extractLetter(v, letters) : extractInteger(v);
}

export function isCorrect(q: Question, given: string | undefined): boolean {
  if (given === undefined) return false;
  return given === q.answer || (q.accept ?? []).includes(given);
}
