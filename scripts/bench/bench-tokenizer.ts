/**
 * bench-tokenizer: MB/s of text tokenized (qwen35 split + WASM BPE) on this machine.
 * Text: this repository's sources and docs plus the multilingual tokenizer cases, ~2 MB.
 *
 *   node dist/scripts/bench/bench-tokenizer.js [-m MODEL]   (default: the tinyA fixture's vocabulary)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { readGguf } from '../../ts/gguf/index.js';
import { ROOT } from '../../ts/paths.js';
import { Tokenizer } from '../../ts/tokenizer/tokenizer.js';

const { values: a } = parseArgs({ options: { model: { type: 'string', short: 'm', default: path.join(ROOT, 'fixtures/tinyA/tinyA-q8_0.gguf') } } });

function corpus(): string {
  const parts: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|md|jinja|comp|cc|h)$/.test(e.name)) parts.push(fs.readFileSync(p, 'utf8'));
    }
  };
  for (const d of ['ts', 'core-as', 'docs', 'native-vk/src', 'shaders', 'fixtures/templates']) walk(path.join(ROOT, d));
  const cases = JSON.parse(fs.readFileSync(path.join(ROOT, 'fixtures/tokenizer/hf-tokenizer-cases.json'), 'utf8')).cases as { text: string }[];
  parts.push(...cases.map((c) => c.text));
  let text = parts.join('\n');
  while (Buffer.byteLength(text) < 2e6) text += '\n' + text;
  return text;
}

const text = corpus();
const bytes = Buffer.byteLength(text);
const f = readGguf(a.model!);
let t0 = performance.now();
const tok = new Tokenizer(f);
const loadMs = performance.now() - t0;
t0 = performance.now();
const ids = tok.encode(text);
const cold = performance.now() - t0;
t0 = performance.now();
tok.encode(text);
const warm = performance.now() - t0;
t0 = performance.now();
const back = tok.decode(ids);
const dec = performance.now() - t0;
if (back !== text) throw new Error('decode(encode(text)) != text');
console.log(`# bench-tokenizer: ${a.model}, vocab ${tok.vocabSize}; ${os.cpus()[0].model}, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log(`text ${(bytes / 1e6).toFixed(2)} MB → ${ids.length} tokens; tokenizer build ${loadMs.toFixed(0)} ms`);
console.log(`encode (first pass: word cache starts empty; the corpus repeats itself) ${(bytes / 1e6 / (cold / 1000)).toFixed(2)} MB/s; encode (warm cache) ${(bytes / 1e6 / (warm / 1000)).toFixed(2)} MB/s; decode ${(bytes / 1e6 / (dec / 1000)).toFixed(2)} MB/s`);
