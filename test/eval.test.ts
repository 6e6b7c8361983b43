/**
 * q36-eval: the embedded questions are well formed and each answer parses by its own extractor;
 * the extractor corpus; the smoke run on tinyA (CPU) is deterministic and grades every question;
 * --regrade-trace reproduces the report and notices a changed grade; bad flags; the TUI's keys
 * through a pty.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXTRACTOR_CORPUS, runCorpus } from '../ts/eval/extractor-corpus.js';
import { extractAnswer, isCorrect } from '../ts/eval/extract.js';
import { loadQuestions, problems } from '../ts/eval/questions.js';
import { driveQ36, fixture, tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const model = fixture('tinyA/tinyA-q2.gguf');
const evalCli = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36-eval.js'), ...args], { encoding: 'utf8', timeout: 300_000 });
const dir = tmpDir();

describe('the embedded questions', () => {
  const qs = loadQuestions();
  it('92 in the README mix, interleaved science / multi-domain / math, then security', () => {
    expect(qs.length).toBe(92);
    const count = (c: string) => qs.filter((q) => q.category === c).length;
    expect([count('science'), count('multidomain'), count('math'), count('security')]).toEqual([25, 25, 25, 17]);
    for (let i = 0; i < 75; i++) expect(qs[i].category).toBe(['science', 'multidomain', 'math'][i % 3]);
    expect(qs.map((q) => q.id)).toEqual(qs.map((_, i) => `q${i + 1}`));
  });
  it('every entry is well formed and its answer (and every accepted one) parses by its own extractor', () => {
    qs.forEach((q, i) => expect(problems(q, i)).toEqual([]));
    for (const q of qs) {
      for (const a of [q.answer, ...(q.accept ?? [])]) {
        const got = extractAnswer(q.format, `Reasoning.\n</think>\n\nAnswer: ${a}`, true, q.choices?.length);
        expect(got, q.id).toBe(a);
        expect(isCorrect(q, got)).toBe(true);
      }
      expect(isCorrect(q, undefined)).toBe(false);
    }
  });
  it('some math answers, recomputed here', () => {
    const byQ = (text: RegExp) => qs.find((q) => text.test(q.question))!.answer;
    expect(byQ(/remainder when 2\^100 is divided by 13/)).toBe(String(Number(2n ** 100n % 13n)));
    expect(byQ(/last three digits of 7\^2024/)).toBe(String(Number(7n ** 2024n % 1000n)));
    expect(byQ(/3\^27 is divided by 100/)).toBe(String(Number(3n ** 27n % 100n)));
    expect(byQ(/contain the digit 7/)).toBe(String(Array.from({ length: 2025 }, (_, i) => String(i + 1)).filter((s) => s.includes('7')).length));
    expect(byQ(/ordered pairs \(a, b\)/)).toBe(String(Array.from({ length: 360 }, (_, i) => i + 1).filter((d) => 360 % d === 0).length));
  });
  it('a broken question file is refused naming the entry', () => {
    const f = path.join(dir, 'bad.json');
    fs.writeFileSync(f, JSON.stringify({ questions: [{ id: 'q1', category: 'math', format: 'integer', question: 'What is one plus one?', answer: '02', rationale: 'x' }] }));
    expect(() => loadQuestions(f)).toThrow(/q1.*answer 02 is not a canonical integer/);
  });
});

describe('the extractors', () => {
  it('the corpus', () => expect(runCorpus(EXTRACTOR_CORPUS)).toEqual([]));
  it('--self-test-extractors exits 0 and says so', () => {
    const r = evalCli('--self-test-extractors');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`${EXTRACTOR_CORPUS.length}/${EXTRACTOR_CORPUS.length} cases pass`));
  });
});

describe('the smoke run on tinyA (CPU)', () => {
  const run = (trace: string) => evalCli('-m', model, '--cpu', '--plain', '--questions', '4', '--tokens', '2048', '--temp', '0', '--seed', '1', '--trace', trace);
  const questionsOf = (f: string) => fs.readFileSync(f, 'utf8').trim().split('\n').slice(1).map((l) => { const { ms: _ms, ...rest } = JSON.parse(l); return rest; });
  const t1 = path.join(dir, 't1.jsonl'), t2 = path.join(dir, 't2.jsonl');
  it('is deterministic and grades every question', () => {
    const a = run(t1), b = run(t2);
    expect(a.status, a.stderr).toBe(0);
    expect(b.status).toBe(0);
    const q1 = questionsOf(t1);
    expect(q1).toEqual(questionsOf(t2));
    expect(q1.map((q) => q.id)).toEqual(['q1', 'q2', 'q3', 'q4']);
    for (const q of q1) { expect(typeof q.pass).toBe('boolean'); expect(q.generatedTokens).toBeGreaterThan(0); expect(q.generatedTokens).toBeLessThanOrEqual(2048); }
    expect(a.stdout).toMatch(/total +\d\/4 passed/);
  }, 300_000);
  it('--regrade-trace gives the same report, and notices a grade that changes', () => {
    const r = evalCli('--regrade-trace', t1);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/0 changed/);
    const orig = questionsOf(t1);
    for (const q of orig) expect(r.stdout).toMatch(new RegExp(`${q.id} .* ${q.pass ? 'PASS' : 'FAIL'}`));
    // the same trace with q1's reply ending in its correct answer
    const lines = fs.readFileSync(t1, 'utf8').trim().split('\n');
    const q1 = JSON.parse(lines[1]);
    q1.generated += '\n</think>\n\nAnswer: A';
    lines[1] = JSON.stringify(q1);
    const edited = path.join(dir, 'edited.jsonl');
    fs.writeFileSync(edited, lines.join('\n') + '\n');
    const e = evalCli('--regrade-trace', edited);
    expect(e.stdout).toMatch(/changed q1: given .* → A, FAIL → PASS/);
    expect(e.stdout).toMatch(/1 changed/);
  });
});

function noCategory(): string {
  const f = path.join(tmpDir(), 'trace.jsonl');
  fs.writeFileSync(f, `${JSON.stringify({ type: 'run', version: 1, model: 'm', backend: 'cpu', tokens: 8, think: false, temp: 0, seed: 1 })}\n${JSON.stringify({ type: 'question', id: 'q1', generated: 'x', format: 'integer', correct: '1' })}\n`);
  return f;
}

describe('a long generated text is graded in bounded time (#45 item 12)', () => {
  it('480 KB of unclosed \\text{ is read up to EXTRACT_TAIL characters from its end', () => {
    const t0 = Date.now();
    expect(extractAnswer('integer', '\\text{'.repeat(80_000) + ' the answer is 42', false)).toBe('42');
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe('bad input is refused by name', () => {
  it('flags and files', () => {
    const cases: [string[], RegExp][] = [
      [['-m', model, '--cpu', '--only', 'q999'], /--only: no question or category "q999"/],
      [['-m', model, '--cpu', '--questions', '0'], /--questions/],
      [['-m', model, '--cpu', '--questions', '3', '--only', 'q1'], /--questions or --only, not both/],
      [['-m', model, '--cpu', '--tokens', '400000', '--questions', '1'], /needs a context of \d+, more than the model's 4096/],
      [['--regrade-trace', path.join(ROOT, 'package.json')], /not a q36-eval trace/],
      [['--regrade-trace', '/nonexistent/trace'], /cannot read trace/],
      // #45 item 12: a question line without a category was a crash
      [['--regrade-trace', noCategory()], /:2: not a question line \(no "category"\)/],
    ];
    for (const [args, rx] of cases) {
      const r = evalCli(...args);
      expect(r.status, args.join(' ')).not.toBe(0);
      expect(r.stderr, args.join(' ')).toMatch(rx);
    }
  });
});

describe('the TUI', () => {
  it('p pauses and resumes, Down + Enter queues the selected question next, q stops with the report', () => {
    const out = driveQ36([
      { expect: 'q36-eval +cpu', timeout: 60 },
      { send: 'p' },
      { expect: '\\[paused\\]', timeout: 20 },
      { sleep: 0.5 },
      // to the top of the list whatever ran before the pause took (the selection follows the
      // running question), then down to q20: far enough that the pause comes before it even on a
      // loaded machine (the old q7 target failed once in CI, where the pause can land later)
      { send: '\x1b[A'.repeat(50) }, { send: '\x1b[B'.repeat(19) },
      { send: '\r' },
      { expect: 'NEXT', timeout: 20 },
      { send: 'p' },
      { expect: 'q20 +multidomain +RUN', timeout: 60 },
      { expect: 'q20 +multidomain +(PASS|FAIL)', timeout: 120 },
      { send: 'q' },
      // the report lists the questions in the order they ran: the queued q20 before q19
      { expect: 'result(?:(?!q19 )[\\s\\S])*q20 +multidomain', timeout: 60 },
      { expect: 'total +\\d+/\\d+ passed \\(\\d+ not run\\)', timeout: 60 },
    ], ['-m', model, '--cpu', '--questions', '40', '--tokens', '2048', '--temp', '0'], 180_000, 'q36-eval');
    expect(out.ok, out.transcript.slice(-2000)).toBe(true);
    expect(out.exit).toBe(130);
  }, 200_000);
});
