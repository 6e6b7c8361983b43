/**
 * make-model: write a synthetic qwen35moe GGUF (random valid weights, real or tiny shapes).
 *
 *   node dist/scripts/models/make-model.js --preset full --recipe q2 --out /tmp/full-q2.gguf [--seed 1]
 *   node dist/scripts/models/make-model.js --preset tiny --recipe q8_0 --out fixtures/x.gguf --layers 8
 *
 * Deterministic from --seed; memory stays at one 16 MiB chunk whatever the model size.
 */
import { parseArgs } from 'node:util';
import * as path from 'node:path';
import { ROOT } from '../../ts/paths.js';
import { PRESETS, RECIPES, defaultChatTemplate, makeModel, type Recipe } from '../../ts/model/synthetic-model.js';

function main(): number {
  let a;
  try {
    a = parseArgs({
      options: {
        preset: { type: 'string', default: 'tiny' },
        recipe: { type: 'string', default: 'q2' },
        out: { type: 'string' },
        seed: { type: 'string', default: '1' },
        layers: { type: 'string' },
        quiet: { type: 'boolean', default: false },
        mtp: { type: 'boolean', default: false },
        'mtp-only': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (e) {
    console.error(`make-model: ${(e as Error).message}`);
    return 2;
  }
  if (a.help) {
    console.log('usage: make-model --preset tiny|full --recipe bf16|q8_0|q2|q2q4|mixed|iq2m|iq1m --out FILE [--seed N] [--layers N] [--mtp | --mtp-only]\n  --mtp: a synthetic MTP head after the trunk (llama.cpp\'s nextn layout); --mtp-only: the head alone with the embedding and head it shares (an MTP-only file)');
    return 0;
  }
  const preset = PRESETS[a.preset as 'tiny' | 'full'];
  if (!preset) { console.error(`make-model: unknown --preset "${a.preset}" (tiny, full)`); return 2; }
  if (!RECIPES.includes(a.recipe as Recipe)) { console.error(`make-model: unknown --recipe "${a.recipe}" (${RECIPES.join(', ')})`); return 2; }
  if (!a.out) { console.error('make-model: --out FILE is required'); return 2; }
  if (a.mtp && a['mtp-only']) { console.error('make-model: give --mtp or --mtp-only, not both'); return 2; }
  const seed = Number(a.seed);
  if (!Number.isInteger(seed)) { console.error(`make-model: --seed must be an integer, got "${a.seed}"`); return 2; }
  const geometry = { ...preset };
  if (a.layers !== undefined) {
    const n = Number(a.layers);
    if (!Number.isInteger(n) || n < 1) { console.error(`make-model: --layers must be a positive integer, got "${a.layers}"`); return 2; }
    geometry.nLayer = n;
  }
  const chatTemplate = defaultChatTemplate(path.join(ROOT, 'fixtures/templates/qwen3.6.jinja'));
  const t0 = Date.now();
  let lastPrint = 0;
  const r = makeModel({
    out: a.out, geometry, recipe: a.recipe as Recipe, seed, chatTemplate, mtp: a.mtp ? 'with' : a['mtp-only'] ? 'only' : undefined,
    progress: (done, total) => {
      if (a.quiet) return;
      const now = Date.now();
      if (now - lastPrint > 2000 || done === total) {
        lastPrint = now;
        process.stderr.write(`\r${(done / 1e9).toFixed(2)} / ${(total / 1e9).toFixed(2)} GB  ${((done / 1e6) / ((now - t0) / 1000 + 1e-9)).toFixed(0)} MB/s   `);
      }
    },
  });
  const secs = (Date.now() - t0) / 1000;
  if (!a.quiet) process.stderr.write('\n');
  console.log(`wrote ${a.out}: ${r.tensors} tensors, ${r.bytes} bytes (${(r.bytes / 2 ** 30).toFixed(2)} GiB) in ${secs.toFixed(1)} s`);
  return 0;
}

process.exitCode = main();
