#!/usr/bin/env node
/**
 * q36-eval: the capability regression run — 92 embedded questions (ts/eval/questions.json)
 * through the real inference path, graded by their final answers. docs/eval.md.
 *   q36-eval [-m MODEL] [--cpu|--vulkan] [--tokens 16000] [--nothink] [--questions N | --only q1,q5,math]
 *            [--temp T --seed S] [--trace FILE] [--plain]
 *   q36-eval --regrade-trace FILE      (no model)
 *   q36-eval --self-test-extractors    (no model)
 */
import { openEngine } from '../engine/index.js';
import { EXTRACTOR_CORPUS, runCorpus } from '../eval/extractor-corpus.js';
import { loadQuestions, type Question } from '../eval/questions.js';
import { report, resultLine } from '../eval/report.js';
import { renderQuestion, runQuestion, type QuestionResult } from '../eval/runner.js';
import { TraceWriter, regrade } from '../eval/trace.js';
import { EvalTui } from '../eval/tui.js';
import { CliError, loadTokenizer, openModelHeader } from './load-tokenizer.js';
import { ENGINE_PARSE_OPTIONS, engineOptions, num, parseCliArgs } from './options.js';
import { printVersionIfAsked } from './version.js';
import { wrapHelp } from './help.js';
import { defaultModel } from './model-store.js';
import { modelEnv } from './env.js';

const HELP = `usage: q36-eval [-m MODEL] [--cpu|--vulkan] [--tokens N (16000)] [--nothink] [--questions N | --only IDS/CATEGORIES]
                [--temp T (0.6)] [--seed S (1)] [--trace FILE] [--plain] [-ctk T -ctv T] [--vk-device N]
       q36-eval --regrade-trace FILE
       q36-eval --self-test-extractors
92 questions (25 science, 25 multi-domain, 25 math, 17 security), asked in order, each with a
--tokens generation budget (thinking closes after 3/4 of it); the context is sized from the largest
selected prompt plus the budget. On a terminal a TUI (p pause, q stop and report, Up/Down select,
Enter run the selected question next); --plain prints one line per question.`;

function select(all: Question[], a: { questions?: string; only?: string }): Question[] {
  if (a.questions !== undefined && a.only !== undefined) throw new CliError('give --questions or --only, not both');
  if (a.only !== undefined) {
    const want = a.only.split(',').map((s) => s.trim()).filter(Boolean);
    const picked = all.filter((q) => want.includes(q.id) || want.includes(q.category));
    const unknown = want.filter((w) => !all.some((q) => q.id === w || q.category === w));
    if (unknown.length) throw new CliError(`--only: no question or category ${unknown.map((u) => JSON.stringify(u)).join(', ')} (ids q1…q${all.length}; science, multidomain, math, security)`);
    return picked;
  }
  const n = num('--questions', a.questions, { min: 1, max: all.length, int: true });
  return n === undefined ? all : all.slice(0, n);
}

async function main(): Promise<number> {
  if (printVersionIfAsked('q36-eval')) return 0;
  const a = parseCliArgs({
    ...ENGINE_PARSE_OPTIONS,
    model: { type: 'string', short: 'm', default: defaultModel(modelEnv()) }, tokens: { type: 'string', default: '16000' },
    nothink: { type: 'boolean' }, questions: { type: 'string' }, only: { type: 'string' },
    temp: { type: 'string', default: '0.6' }, 'top-p': { type: 'string', default: '0.95' }, 'top-k': { type: 'string', default: '20' },
    seed: { type: 'string', default: '1' }, trace: { type: 'string' }, plain: { type: 'boolean' },
    'regrade-trace': { type: 'string' }, 'self-test-extractors': { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  });
  if (a.help) { console.log(wrapHelp(HELP)); return 0; }
  if (a['self-test-extractors']) {
    const fails = runCorpus(EXTRACTOR_CORPUS);
    for (const f of fails) console.log(`FAIL ${f}`);
    console.log(`extractor self-test: ${EXTRACTOR_CORPUS.length - fails.length}/${EXTRACTOR_CORPUS.length} cases pass`);
    return fails.length ? 1 : 0;
  }
  const questions = loadQuestions();
  if (a['regrade-trace']) {
    let g;
    try { g = regrade(a['regrade-trace'], questions); } catch (e) { throw new CliError((e as Error).message); }
    for (const r of g.rows.filter((x) => x.changed)) console.log(`changed ${r.result.id}: given ${r.was.given ?? '—'} → ${r.result.given ?? '—'}, ${r.was.pass ? 'PASS' : 'FAIL'} → ${r.result.pass ? 'PASS' : 'FAIL'}`);
    console.log(report(g.rows.map((r) => r.result)));
    console.log(`regraded ${g.rows.length} question(s) of ${a['regrade-trace']} (model ${g.header.model}): ${g.rows.filter((r) => r.changed).length} changed`);
    return 0;
  }
  const picked = select(questions, a);
  const tokens = num('--tokens', a.tokens, { min: 16, int: true })!;
  const temp = num('--temp', a.temp, { min: 0 })!;
  const seed = num('--seed', a.seed, { int: true })!;
  const think = !a.nothink;
  const header = openModelHeader(a.model!);
  const native = Number(header.metadata.get('qwen35moe.context_length')?.value ?? 262144);
  // the context: the largest selected prompt plus the budget (the tokenizer of the file counts)
  const probe = loadTokenizer(a.model!);
  const longest = Math.max(...picked.map((q) => probe.encode(renderQuestion(q, think)).length));
  const ctx = longest + tokens + 8;
  if (ctx > native) throw new CliError(`the largest selected prompt (${longest} tokens) plus --tokens ${tokens} needs a context of ${ctx}, more than the model's ${native}: lower --tokens`);
  const eo = engineOptions(a.model!, { ...a, ctx: String(ctx) }, native);
  let engine;
  try { engine = await openEngine(eo); } catch (e) { throw new CliError((e as Error).message); }
  const session = engine.newSession();
  const trace = a.trace ? new TraceWriter(a.trace, { model: a.model!, backend: engine.backend, tokens, think, temp, seed }) : undefined;
  const sampling = { temperature: temp, topP: num('--top-p', a['top-p'], { min: 0, max: 1 })!, topK: num('--top-k', a['top-k'], { min: 0, int: true })!, minP: 0 };
  const tty = !a.plain && process.stdout.isTTY && process.stdin.isTTY;
  const ac = new AbortController();
  const tui = tty ? new EvalTui(picked, process.stdout, process.stdin, `q36-eval  ${engine.backend}  ${tokens} tokens${think ? '' : '  nothink'}`) : undefined;
  const results: QuestionResult[] = [];
  let stopped = false;
  const onSigint = () => { stopped = true; ac.abort(); };
  process.on('SIGINT', onSigint);
  if (tui) { tui.onStop = () => { stopped = true; ac.abort(); }; tui.start(); }
  else process.stderr.write(`${engine.describe()}\n${picked.length} question(s), ${tokens}-token budget, ${think ? 'thinking' : 'no thinking'}, temp ${temp}, seed ${seed}, ctx ${ctx}\n`);
  try {
    const order = picked.map((_, i) => i);
    for (;;) {
      if (stopped) break;
      const i = tui ? tui.next(order) : order.shift();
      if (i === undefined) break;
      const q = picked[i];
      tui?.begin(i);
      const r = await runQuestion(engine, session, q, { tokens, think, sampling, seed, signal: ac.signal, gate: tui?.gate, onText: tui ? (t, re) => tui.text(t, re) : undefined });
      const interrupted = r.stop === 'abort';
      tui?.end(i, r, interrupted);
      if (interrupted) break;
      results.push(r);
      trace?.add(r);
      if (!tui) console.log(resultLine(r));
    }
  } finally {
    tui?.finish();
    process.off('SIGINT', onSigint);
    session.dispose();
    engine.dispose();
  }
  console.log(report(results, { total: picked.length }));
  return stopped ? 130 : 0;
}

main().then((c) => { process.exitCode = c; }, (e) => {
  console.error(`q36-eval: ${(e as Error).message}`);
  process.exitCode = e instanceof CliError ? e.exitCode : 1;
});
