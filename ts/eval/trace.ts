/**
 * --trace FILE: JSON lines — a "run" header (model, budget, thinking, sampling) and one "question"
 * line per graded question with its prompt, the whole generated text and the grade — and
 * --regrade-trace: the current extractors and scorer over a saved trace, without a model.
 */
import * as fs from 'node:fs';
import { extractAnswer, isCorrect } from './extract.js';
import type { Question } from './questions.js';
import type { QuestionResult } from './runner.js';

export interface RunHeader { type: 'run'; version: 1; model: string; backend: string; tokens: number; think: boolean; temp: number; seed: number }

export class TraceWriter {
  constructor(private readonly file: string, header: Omit<RunHeader, 'type' | 'version'>) {
    fs.writeFileSync(file, JSON.stringify({ type: 'run', version: 1, ...header }) + '\n');
  }
  add(r: QuestionResult): void {
    fs.appendFileSync(this.file, JSON.stringify({ type: 'question', ...r }) + '\n');
  }
}

export interface Regraded { result: QuestionResult; was: { given?: string; pass: boolean }; changed: boolean }

/** Reads a trace and grades its generated texts again; errors name the line. */
export function regrade(file: string, questions: Question[]): { header: RunHeader; rows: Regraded[] } {
  let text: string;
  try { text = fs.readFileSync(file, 'utf8'); } catch (e) { throw new Error(`cannot read trace ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`); }
  const lines = text.split('\n').filter((l) => l.trim());
  const parse = (l: string, i: number) => { try { return JSON.parse(l); } catch { throw new Error(`${file}:${i + 1}: not a JSON line`); } };
  let header: RunHeader | undefined;
  try { header = JSON.parse(lines[0] ?? ''); } catch { header = undefined; }
  if (header?.type !== 'run' || header.version !== 1) throw new Error(`${file}: not a q36-eval trace (its first line is not a version 1 "run" header)`);
  const byId = new Map(questions.map((q) => [q.id, q]));
  const rows = lines.slice(1).map((l, i) => {
    const r = parse(l, i + 1) as QuestionResult & { type: string };
    if (r.type !== 'question' || typeof r.generated !== 'string') throw new Error(`${file}:${i + 2}: not a question line`);
    for (const k of ['id', 'category', 'format', 'correct'] as const) if (typeof r[k] !== 'string') throw new Error(`${file}:${i + 2}: not a question line (no "${k}")`);
    const q = byId.get(r.id);
    if (!q) throw new Error(`${file}:${i + 2}: question ${r.id} is not in this version's set`);
    const given = extractAnswer(q.format, r.generated, header.think, q.choices?.length);
    const result = { ...r, given, correct: q.answer, pass: isCorrect(q, given) };
    return { result, was: { given: r.given, pass: r.pass }, changed: given !== r.given || result.pass !== r.pass };
  });
  return { header: header!, rows };
}
