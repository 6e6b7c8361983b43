#!/usr/bin/env node
/**
 * q36-bench: prefill and decode throughput at context frontiers, CSV on stdout.
 *   q36-bench [--cpu|--vulkan] -m MODEL [--prompt-file F] --ctx-start 2048 --ctx-max 32768
 *             [--step-incr N (2048) | --step-mul F] --gen-tokens 128 [-ctk T -ctv T] [--warmup N]
 * (node:util parseArgs, no npm dependency: it runs on machines that only carry the build.)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openEngine } from '../engine/index.js';
import { kvBytesPerToken } from '../engine/payload.js';
import { ROOT } from '../paths.js';
import { CSV_DRAFT, CSV_HEADER, draftLine, expertLine, csvRow, frontierList, runFrontiers, tokenSequence } from '../bench/frontiers.js';
import { DRAFT_BENCH_KINDS, type DraftBenchKind } from '../bench/draft-probe.js';
import { CliError, openModelHeader } from './load-tokenizer.js';
import { ENGINE_PARSE_OPTIONS, draftSpec, engineOptions, num, parseCliArgs } from './options.js';
import { printVersionIfAsked } from './version.js';
import type { Grammar } from '../grammar/constraint.js';
import { jsonGrammar } from '../grammar/grammars.js';
import { vocabIndex } from '../grammar/vocab.js';
import { vocabFileTokenizer } from '../grammar/vocab-file.js';
import { wrapHelp } from './help.js';
import { defaultModel } from './model-store.js';
import { modelEnv } from './env.js';

const HELP = `usage: q36-bench [--cpu|--vulkan] -m MODEL [--prompt-file F] --ctx-start N --ctx-max N [--step-incr N (default 2048) | --step-mul F]
                 [--gen-tokens 128] [-ctk f16|q8_0|q4_0] [-ctv f16|q8_0|q4_0] [--warmup N] [--vk-device N]
Walks one token sequence (default prompt: fixtures/bench/lighthouse.txt, repeated) to each context
frontier with incremental prefill, decodes a greedy probe of --gen-tokens there (EOS ignored),
restores the state and continues. CSV: ${CSV_HEADER}
Structured output: --json-schema FILE decodes the probe under that schema (greedy among the
tokens it allows; a finished document starts the next) twice from the same state: the CSV has the
second pass (the masks cached, as for a schema's later requests), "grammar at N: …" on stderr both;
--grammar-vocab FILE computes its masks over a vocabulary file of the model's size instead of the
model's own (the synthetic models' placeholder vocabulary: fixtures/grammar/bpe-vocab-248k.bin.gz).
SSD streaming: --ssd-streaming [--ssd-streaming-cache-experts N|SIZE] [--ssd-streaming-cold |
--ssd-streaming-preload-experts N] [--ssd-streaming-full-layers N] [--vk-memory-limit SIZE], as q36;
each row then adds "experts at N: …" on stderr (hit rate and MiB read, prefill and per decoded token).
Speculative decoding: --draft oracle|ngram|reject [--draft-max N (4)] decodes the probe again with
drafts — the model's own greedy continuation (oracle: every draft accepted), prompt-lookup drafts
(ngram), or drafts that are always wrong (reject) — and checks its tokens equal the plain probe's;
--mtp FILE|auto [--mtp-draft N (2)] [--mtp-margin F] drafts with the model's MTP head (it follows the
session's prefills; the plain probe runs without it); with --draft ngram too, prompt lookup first. The CSV adds ${CSV_DRAFT.slice(1)},
and "drafts at N: …" on stderr the rates, the drafts accepted and the draft step's time for 1..N+1 rows.`;

async function main(): Promise<number> {
  if (printVersionIfAsked('q36-bench')) return 0;
  const a = parseCliArgs({
    ...ENGINE_PARSE_OPTIONS,
    model: { type: 'string', short: 'm', default: defaultModel(modelEnv()) }, 'prompt-file': { type: 'string' },
    'ctx-start': { type: 'string', default: '2048' }, 'ctx-max': { type: 'string', default: '32768' },
    'step-incr': { type: 'string' }, 'step-mul': { type: 'string' }, 'gen-tokens': { type: 'string', default: '128' },
    warmup: { type: 'string', default: '0' }, 'json-schema': { type: 'string' }, 'grammar-vocab': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (a.help) { console.log(wrapHelp(HELP)); return 0; }
  if (a.ctx !== undefined) throw new CliError('--ctx is not a q36-bench flag: the context is sized from --ctx-max and --gen-tokens');
  const start = num('--ctx-start', a['ctx-start'], { min: 1, int: true })!;
  const max = num('--ctx-max', a['ctx-max'], { min: 1, int: true })!;
  const gen = num('--gen-tokens', a['gen-tokens'], { min: 0, int: true })!;
  const warmup = num('--warmup', a.warmup, { min: 0, int: true })!;
  const draft = draftSpec(a, DRAFT_BENCH_KINDS, { mtp: true });
  let frontiers: number[];
  try {
    frontiers = frontierList(start, max, { incr: num('--step-incr', a['step-incr'], { min: 1, int: true }), mul: num('--step-mul', a['step-mul']) });
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  const promptFile = a['prompt-file'] ?? path.join(ROOT, 'fixtures', 'bench', 'lighthouse.txt');
  let text: string;
  try { text = fs.readFileSync(promptFile, 'utf8'); } catch (e) { throw new CliError(`cannot read --prompt-file "${promptFile}": ${(e as NodeJS.ErrnoException).code}`); }
  let schema: unknown;
  if (a['json-schema'] !== undefined) {
    try { schema = JSON.parse(fs.readFileSync(a['json-schema'], 'utf8')); } catch (e) { throw new CliError(`cannot read --json-schema "${a['json-schema']}": ${(e as Error).message}`); }
  }
  if (a['grammar-vocab'] !== undefined && schema === undefined) throw new CliError('--grammar-vocab needs --json-schema');
  if (draft && schema !== undefined) throw new CliError('--draft and --json-schema are measured in separate runs');
  let grammar: Grammar | undefined;
  try { if (schema !== undefined) grammar = jsonGrammar(schema); } catch (e) { throw new CliError(`--json-schema: ${(e as Error).message}`); }
  const header = openModelHeader(a.model!);
  // with drafts the draft-step timing goes on past the probe: 7 steps of each row count up to
  // draft-max + 1, a token further each, the last step's rows beyond them
  const ctx = max + Math.max(gen, draft ? 8 * (Math.max(draft.max, draft.mtp?.max ?? 0) + 1) : 0) + 1;
  const native = Number(header.metadata.get('qwen35moe.context_length')?.value ?? 262144);
  // the context is sized from the flags the user gave: name those, not an internal --ctx
  if (ctx > native) throw new CliError(`--ctx-max ${max} + --gen-tokens ${gen} (+1) = ${ctx} tokens exceed the model's context length ${native}: lower --ctx-max or --gen-tokens`);
  const eo = engineOptions(a.model!, { ...a, ctx: String(ctx) }, native, draft);
  let engine;
  try { engine = await openEngine(eo); } catch (e) { throw new CliError((e as Error).message); }
  try {
    process.stderr.write(`${engine.describe()}\nfrontiers ${frontiers.join(', ')}; decode probe ${gen} tokens; prompt ${promptFile}\n`);
    const tokens = tokenSequence(engine.tokenizer.encode(text), max + gen);
    const kvPerToken = kvBytesPerToken(engine.shape, eo.kvTypes!);
    let tokenizer = engine.tokenizer;
    if (a['grammar-vocab'] !== undefined) {
      try { tokenizer = vocabFileTokenizer(a['grammar-vocab']); } catch (e) { throw new CliError(`cannot read --grammar-vocab "${a['grammar-vocab']}": ${(e as Error).message}`); }
      if (tokenizer.tokens.length !== engine.shape.nVocab) throw new CliError(`--grammar-vocab has ${tokenizer.tokens.length} tokens, the model ${engine.shape.nVocab}`);
    }
    if (grammar) process.stderr.write(`grammar vocabulary index: ${vocabIndex(tokenizer).buildMs.toFixed(0)} ms\n`);
    console.log(CSV_HEADER + (draft ? CSV_DRAFT : ''));
    await runFrontiers({
      engine, tokens, frontiers, genTokens: gen, warmup, kvBytesPerToken: kvPerToken, grammar: grammar && { grammar, tokenizer },
      draft: draft && { kind: draft.kind as DraftBenchKind, max: draft.max, rows: Math.max(draft.max, draft.mtp?.max ?? 0) + 1, mtp: draft.mtp },
      onRow: (r) => {
        console.log(csvRow(r));
        const x = expertLine(r) ?? '', d = draftLine(r);
        if (x) process.stderr.write(`${x}\n`);
        if (d) process.stderr.write(`${d}\n`);
        if (r.grammar) {
          const g = r.grammar, per = (x: number) => (x / Math.max(1, r.decodeTokens)).toFixed(3);
          process.stderr.write(`grammar at ${r.frontier}: first pass ${g.coldTps.toFixed(2)} t/s (${g.cold.masks} masks computed, ${per(g.cold.ms)} ms per token while the steps ran; masked sampling ${per(g.cold.sampleMs)} ms per token); again with the masks cached ${r.decodeTps.toFixed(2)} t/s (masked sampling ${per(g.warm.sampleMs)} ms per token); ${g.cold.documents} documents completed\n`);
        }
      },
    });
  } finally {
    engine.dispose();
  }
  return 0;
}

main().then((c) => { process.exitCode = c; }, (e) => {
  console.error(`q36-bench: ${(e as Error).message}`);
  process.exitCode = e instanceof CliError ? e.exitCode : 1;
});
