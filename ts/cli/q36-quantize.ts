#!/usr/bin/env node
/**
 * q36-quantize: the native GGUF quantizer (byte-compatible with llama-quantize for the README's
 * recipes), and its quality check.
 *   q36-quantize IN.gguf OUT.gguf --recipe q2|q2q4|q8_0 [--imatrix FILE] [--tensor-type PATTERN=TYPE]...
 *                [--q4-layers A-B] [--threads N]
 *   q36-quantize --check SOURCE.gguf QUANT.gguf -f TEXT [--ctx 512] [--chunks N] [--positions FILE.csv]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { typeName } from '../gguf/index.js';
import { openEngine } from '../engine/index.js';
import { checkQuality, type PositionResult } from '../quantize/check.js';
import { parseTypeName, PlanError, RECIPES, type Recipe, type TypeOverride } from '../quantize/plan.js';
import { quantizeModel } from '../quantize/quantize.js';
import { OUTPUT_TYPES } from '../quantize/rows.js';
import { CliError } from './load-tokenizer.js';
import { num, parseCli } from './options.js';
import { printVersionIfAsked } from './version.js';
import { wrapHelp } from './help.js';

const HELP = `usage: q36-quantize IN.gguf OUT.gguf --recipe q2|q2q4|q8_0 [--imatrix FILE] [--tensor-type PATTERN=TYPE]...
                    [--q4-layers A-B] [--threads N]
       q36-quantize --check SOURCE.gguf QUANT.gguf -f TEXT [--ctx N (512)] [--chunks N] [--positions FILE.csv]

Recipes (the QuarkStar README's): q2 = routed gate/up IQ2_XXS, routed down Q2_K, every other 2-D
weight Q8_0, 1-D tensors, router and conv kept; q2q4 = q2 with the routed experts of --q4-layers
(default: the last 15% of layers, 34-39 of 40) at Q4_K; q8_0 = every 2-D weight Q8_0.
Inputs: BF16, F16, F32 or Q8_0 (a Q8_0 tensor that stays Q8_0 is copied). IQ2_XXS needs --imatrix
(llama.cpp's GGUF imatrix format; q36-imatrix writes it). --tensor-type: a regular expression
searched in tensor names (first match wins), TYPE one of ${OUTPUT_TYPES.map((t) => typeName(t).toLowerCase()).join(', ')}.
--check: KL divergence and top-1 agreement of QUANT against SOURCE over TEXT (CPU engine), per
window and in total; --positions writes every position to a CSV file.`;

function progressBar(label: string) {
  const tty = process.stderr.isTTY;
  let lastPct = -1;
  return (done: number, total: number, what = '') => {
    const pct = total ? Math.floor((100 * done) / total) : 100;
    if (tty) {
      const w = 30, fill = Math.round((w * pct) / 100);
      process.stderr.write(`\r${label} [${'#'.repeat(fill)}${'.'.repeat(w - fill)}] ${String(pct).padStart(3)}% ${what.slice(0, 40).padEnd(40)}`);
      if (done >= total) process.stderr.write('\n');
    } else if (pct >= lastPct + 10 || done >= total) {
      lastPct = pct;
      process.stderr.write(`${label} ${pct}%${what ? ` ${what}` : ''}\n`);
    }
  };
}

function parseLayers(v: string | undefined): [number, number] | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d+)(?:-(\d+))?$/.exec(v);
  if (!m) throw new CliError(`--q4-layers expects A-B (layer numbers), got "${v}"`);
  return [Number(m[1]), Number(m[2] ?? m[1])];
}

function parseOverrides(list: string[] | undefined): TypeOverride[] {
  return (list ?? []).map((s) => {
    const i = s.lastIndexOf('=');
    if (i <= 0 || i === s.length - 1) throw new CliError(`--tensor-type expects PATTERN=TYPE, got "${s}"`);
    const type = parseTypeName(s.slice(i + 1));
    if (type === undefined) throw new CliError(`--tensor-type ${s}: unknown or unsupported type "${s.slice(i + 1)}" (q36-quantize writes ${OUTPUT_TYPES.map((t) => typeName(t).toLowerCase()).join(', ')})`);
    return { pattern: s.slice(0, i), type };
  });
}

async function check(a: Record<string, unknown>, pos: string[]): Promise<number> {
  if (pos.length !== 2) throw new CliError('--check needs SOURCE.gguf QUANT.gguf');
  if (!a.file) throw new CliError('--check needs -f TEXT (the evaluation text)');
  for (const f of ['recipe', 'imatrix', 'tensor-type', 'q4-layers'] as const) if (a[f] !== undefined) throw new CliError(`--${f} is a quantizing flag, not a --check flag`);
  const ctx = num('--ctx', a.ctx as string | undefined, { min: 2, int: true }) ?? 512;
  const chunks = num('--chunks', a.chunks as string | undefined, { min: 1, int: true });
  let text: string;
  try { text = fs.readFileSync(a.file as string, 'utf8'); } catch (e) { throw new CliError(`cannot read -f "${a.file}": ${(e as NodeJS.ErrnoException).code}`); }
  for (const p of pos) if (!fs.existsSync(p)) throw new CliError(`model file "${p}" not found`);
  const [source, quant] = [await openEngine({ model: pos[0], backend: 'cpu', ctx }), await openEngine({ model: pos[1], backend: 'cpu', ctx })];
  let csv: number | undefined;
  try {
    if (source.shape.nVocab !== quant.shape.nVocab) throw new CliError(`the models have different vocabularies (${source.shape.nVocab} vs ${quant.shape.nVocab})`);
    if (a.positions) { csv = fs.openSync(a.positions as string, 'w'); fs.writeSync(csv, 'window,position,kl,top1_source,top1_quant\n'); }
    const tokens = source.tokenizer.encode(text, { parseSpecial: false });
    const bar = progressBar('check');
    const perWindow: number[] = [];
    const s = await checkQuality({
      source, quant, tokens, ctx, maxWindows: chunks,
      onPosition: csv === undefined ? undefined : (r: PositionResult) => { fs.writeSync(csv!, `${r.window},${r.position},${r.kl.toExponential(6)},${r.top1Source},${r.top1Quant}\n`); },
      onWindow: (d, t, kl) => { perWindow.push(kl); bar(d, t); },
    });
    perWindow.forEach((k, i) => console.log(`window ${i}: mean KL ${k.toExponential(4)}`));
    console.log(`positions ${s.positions} in ${s.windows} windows of ${ctx}`);
    console.log(`KL divergence: mean ${s.meanKl.toExponential(4)}, median ${s.medianKl.toExponential(4)}, p99 ${s.p99Kl.toExponential(4)}, max ${s.maxKl.toExponential(4)}`);
    console.log(`top-1 agreement: ${(100 * s.top1).toFixed(2)}%`);
  } finally {
    if (csv !== undefined) fs.closeSync(csv);
    source.dispose();
    quant.dispose();
  }
  return 0;
}

async function main(): Promise<number> {
  if (printVersionIfAsked('q36-quantize')) return 0;
  const parsed = parseCli({
    recipe: { type: 'string' }, imatrix: { type: 'string' }, 'tensor-type': { type: 'string', multiple: true },
    'q4-layers': { type: 'string' }, threads: { type: 'string' },
    check: { type: 'boolean' }, file: { type: 'string', short: 'f' }, ctx: { type: 'string' }, chunks: { type: 'string' }, positions: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  }, { positionals: true });
  const a = parsed.values, pos = parsed.positionals;
  if (a.help) { console.log(wrapHelp(HELP)); return 0; }
  if (a.check) return check(a, pos);
  for (const f of ['file', 'ctx', 'chunks', 'positions'] as const) if (a[f] !== undefined) throw new CliError(`--${f === 'file' ? 'file/-f' : f} is a --check flag`);
  if (pos.length !== 2) throw new CliError('expected IN.gguf OUT.gguf (see --help)');
  if (!a.recipe) throw new CliError(`--recipe is required: one of ${RECIPES.join(', ')}`);
  if (!(RECIPES as string[]).includes(a.recipe)) throw new CliError(`--recipe must be one of ${RECIPES.join(', ')} (got "${a.recipe}")`);
  const threads = num('--threads', a.threads, { min: 1, max: 256, int: true }) ?? os.availableParallelism();
  const [input, output] = pos;
  if (!fs.existsSync(input)) throw new CliError(`input "${input}" not found`);
  if (a.imatrix !== undefined && !fs.existsSync(a.imatrix)) throw new CliError(`--imatrix "${a.imatrix}" not found`);
  const bar = progressBar('quantize');
  const mem0 = process.memoryUsage().rss;
  let peak = mem0;
  const sample = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 200);
  try {
    const s = await quantizeModel({
      input, output, recipe: a.recipe as Recipe, imatrix: a.imatrix, overrides: parseOverrides(a['tensor-type']),
      q4Layers: parseLayers(a['q4-layers']), threads,
      onProgress: (p) => bar(p.bytesIn, p.totalIn, p.name),
    });
    peak = Math.max(peak, process.memoryUsage().rss);
    const types = Object.entries(s.types).map(([t, n]) => `${n} ${t}`).join(', ');
    console.log(`${output}: ${s.tensors} tensors (${types}), ${(s.bytesIn / 2 ** 20).toFixed(1)} MiB → ${(s.bytesOut / 2 ** 20).toFixed(1)} MiB in ${s.seconds.toFixed(1)} s on ${s.threads} thread${s.threads > 1 ? 's' : ''}, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`);
  } catch (e) {
    if (e instanceof PlanError) throw new CliError(e.message);
    throw e;
  } finally {
    clearInterval(sample);
  }
  return 0;
}

main().then((c) => { process.exitCode = c; }, (e) => {
  if (process.stderr.isTTY) process.stderr.write('\n');
  console.error(`q36-quantize: ${(e as Error).message}`);
  process.exitCode = e instanceof CliError ? e.exitCode : 1;
});
