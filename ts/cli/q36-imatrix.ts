#!/usr/bin/env node
/**
 * q36-imatrix: collects an importance matrix (llama.cpp's GGUF imatrix format) by running the CPU
 * reference engine over calibration text.
 *   q36-imatrix -m MODEL -f TEXT [-c 128] [--chunks N] -o OUT.imatrix
 */
import * as fs from 'node:fs';
import { CpuEngine } from '../engine/cpu/cpu-engine.js';
import { collectImatrix } from '../quantize/imatrix-collect.js';
import { writeImatrix } from '../quantize/imatrix-file.js';
import { CliError } from './load-tokenizer.js';
import { num, parseCliArgs } from './options.js';
import { printVersionIfAsked } from './version.js';
import { wrapHelp } from './help.js';

const HELP = `usage: q36-imatrix -m MODEL -f TEXT [-c 128] [--chunks N] -o OUT.imatrix
Evaluates TEXT in chunks of -c tokens (each from an empty context, like llama-imatrix) on the CPU
reference engine and writes, for every weight the layers multiply, the per-column sums of squared
input activations and the token counts (routed experts: per expert, the tokens routed to it).
The file is llama.cpp's GGUF imatrix format: llama-quantize and q36-quantize both read it.`;

async function main(): Promise<number> {
  if (printVersionIfAsked('q36-imatrix')) return 0;
  const a = parseCliArgs({
    model: { type: 'string', short: 'm' }, file: { type: 'string', short: 'f' }, 'ctx-size': { type: 'string', short: 'c' },
    chunks: { type: 'string' }, output: { type: 'string', short: 'o' }, cpu: { type: 'boolean' }, vulkan: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (a.help) { console.log(wrapHelp(HELP)); return 0; }
  if (a.vulkan) throw new CliError('q36-imatrix runs on the CPU reference engine (--cpu); the Vulkan engine has no activation statistics');
  if (!a.model) throw new CliError('-m MODEL is required');
  if (!a.file) throw new CliError('-f TEXT (the calibration text) is required');
  if (!a.output) throw new CliError('-o OUT.imatrix is required');
  const chunk = num('-c', a['ctx-size'], { min: 16, max: 65536, int: true }) ?? 128;
  const chunks = num('--chunks', a.chunks, { min: 1, int: true });
  if (!fs.existsSync(a.model)) throw new CliError(`model file "${a.model}" not found`);
  let text: string;
  try { text = fs.readFileSync(a.file, 'utf8'); } catch (e) { throw new CliError(`cannot read -f "${a.file}": ${(e as NodeJS.ErrnoException).code}`); }
  const engine = new CpuEngine({ model: a.model, backend: 'cpu', ctx: chunk, chunk: Math.min(chunk, 512) });
  try {
    const t0 = Date.now();
    const m = await collectImatrix({
      engine, text, chunkSize: chunk, maxChunks: chunks, dataset: a.file,
      // progress on a terminal, one line redrawn; nothing in a pipe (the summary line says it all)
      onChunk: (d, n) => { if (process.stderr.isTTY) process.stderr.write(`\rimatrix: chunk ${d}/${n}${d === n ? '\n' : ''}`); },
    });
    writeImatrix(a.output, m);
    console.log(`${a.output}: ${m.entries.size} entries from ${m.chunkCount} chunks of ${chunk} tokens in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } catch (e) {
    if (/fewer than one chunk/.test((e as Error).message)) throw new CliError((e as Error).message);
    throw e;
  } finally {
    engine.dispose();
  }
  return 0;
}

main().then((c) => { process.exitCode = c; }, (e) => {
  console.error(`q36-imatrix: ${(e as Error).message}`);
  process.exitCode = e instanceof CliError ? e.exitCode : 1;
});
