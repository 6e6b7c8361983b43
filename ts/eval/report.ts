/** The per-question report and the per-category totals (plain text, for the terminal and logs). */
import { CATEGORIES } from './questions.js';
import type { QuestionResult } from './runner.js';

export function resultLine(r: QuestionResult): string {
  return `${r.id.padEnd(4)} ${r.category.padEnd(11)} ${String(r.promptTokens).padStart(6)} ${String(r.generatedTokens).padStart(9)} ${(r.ms / 1000).toFixed(1).padStart(7)}s ${(r.given ?? '—').padStart(6)} ${r.correct.padStart(7)}  ${r.pass ? 'PASS' : 'FAIL'}`;
}

export function report(results: QuestionResult[], o: { total?: number } = {}): string {
  const lines = ['id   category    prompt generated     time  given correct  result', ...results.map(resultLine), ''];
  for (const c of CATEGORIES) {
    const rs = results.filter((r) => r.category === c);
    if (rs.length) lines.push(`${c.padEnd(12)} ${rs.filter((r) => r.pass).length}/${rs.length} passed, ${rs.reduce((a, r) => a + r.generatedTokens, 0)} tokens generated`);
  }
  const passed = results.filter((r) => r.pass).length;
  const unanswered = results.filter((r) => r.given === undefined).length;
  lines.push(`total        ${passed}/${results.length} passed${o.total !== undefined && o.total > results.length ? ` (${o.total - results.length} not run)` : ''}, ${unanswered} without an answer`);
  return lines.join('\n');
}
