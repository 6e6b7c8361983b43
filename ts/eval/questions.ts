/**
 * q36-eval's embedded questions (ts/eval/questions.json, written by scripts/build/eval-questions.py):
 * loading, checking and turning one into its user prompt.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ROOT } from '../paths.js';

export type Category = 'science' | 'multidomain' | 'math' | 'security';
export const CATEGORIES: readonly Category[] = ['science', 'multidomain', 'math', 'security'];
/** letter: one of the choices; integer: an exact integer; line: a source line number (0 = safe) */
export type AnswerFormat = 'letter' | 'integer' | 'line';

export interface Question {
  id: string;
  category: Category;
  format: AnswerFormat;
  question: string;
  choices?: string[];
  /** security questions: the C function, one string per line (numbered from 1 in the prompt) */
  code?: string[];
  answer: string;
  /** other answers graded correct (an adjacent line that is the same bug) */
  accept?: string[];
  rationale: string;
}

export const QUESTIONS_PATH = path.join(ROOT, 'ts', 'eval', 'questions.json');

const LETTERS = 'ABCDEFGHIJ';

/** What is wrong with one entry (empty: well formed). */
export function problems(q: Partial<Question>, i: number): string[] {
  const p: string[] = [];
  const at = `questions[${i}]${q.id ? ` (${q.id})` : ''}`;
  if (typeof q.id !== 'string' || !/^q\d+$/.test(q.id)) p.push(`${at}: id must look like q1, q2, …`);
  if (!CATEGORIES.includes(q.category as Category)) p.push(`${at}: category must be one of ${CATEGORIES.join(', ')}`);
  if (typeof q.question !== 'string' || q.question.length < 10) p.push(`${at}: question text missing`);
  if (typeof q.rationale !== 'string' || !q.rationale) p.push(`${at}: rationale missing`);
  if (typeof q.answer !== 'string') p.push(`${at}: answer must be a string`);
  if (q.format === 'letter') {
    if (!Array.isArray(q.choices) || q.choices.length < 2 || q.choices.length > LETTERS.length || q.choices.some((c) => typeof c !== 'string' || !c)) p.push(`${at}: a letter question needs 2-10 non-empty choices`);
    else if (!LETTERS.slice(0, q.choices.length).includes(q.answer ?? '?') || (q.answer ?? '').length !== 1) p.push(`${at}: answer ${q.answer} is not one of the choices' letters`);
  } else if (q.format === 'integer' || q.format === 'line') {
    if (!/^-?(0|[1-9]\d*)$/.test(q.answer ?? '')) p.push(`${at}: answer ${q.answer} is not a canonical integer`);
    if (q.format === 'line') {
      if (!Array.isArray(q.code) || q.code.length < 2) p.push(`${at}: a line question needs its code`);
      else for (const a of [q.answer, ...(q.accept ?? [])]) if (!(Number(a) >= 0 && Number(a) <= q.code.length)) p.push(`${at}: line ${a} is outside the code`);
    }
  } else p.push(`${at}: format must be letter, integer or line`);
  return p;
}

/** The embedded questions, checked (a broken file is an error naming the entry). */
export function loadQuestions(file = QUESTIONS_PATH): Question[] {
  let data: { questions?: unknown };
  try { data = JSON.parse(fs.readFileSync(file, 'utf8')); } catch (e) { throw new Error(`${file}: ${(e as Error).message}`); }
  if (!Array.isArray(data.questions)) throw new Error(`${file}: no "questions" array`);
  const qs = data.questions as Question[];
  const bad = qs.flatMap((q, i) => problems(q, i));
  const ids = new Set<string>();
  for (const q of qs) { if (ids.has(q.id)) bad.push(`duplicate id ${q.id}`); ids.add(q.id); }
  if (bad.length) throw new Error(`${file}: ${bad.slice(0, 5).join('; ')}`);
  return qs;
}

/** The user message a question is asked with (the answer line format is what extract.ts reads). */
export function promptFor(q: Question): string {
  if (q.format === 'letter') {
    const opts = q.choices!.map((c, i) => `${LETTERS[i]}) ${c}`).join('\n');
    return `${q.question}\n\n${opts}\n\nThink it through, then give your final answer on its own last line as "Answer: X", where X is the letter of one choice.`;
  }
  if (q.format === 'integer') return `${q.question}\n\nThe answer is an integer. Think it through, then give your final answer on its own last line as "Answer: N".`;
  const code = q.code!.map((l, i) => `${String(i + 1).padStart(2)}: ${l}`).join('\n');
  return `${q.question}\n\n\`\`\`c\n${code}\n\`\`\`\n\nGive your final answer on its own last line as "Answer: N" (a line number, or 0 if the function is safe).`;
}
