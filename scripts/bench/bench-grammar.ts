/**
 * bench-grammar: what constrained decoding costs on the CPU, per step, over a vocabulary of the
 * real size (fixtures/grammar/bpe-vocab-248k.bin.gz; or a model's with -m): the vocabulary
 * index's build, compiling a 50-property schema (fixtures/grammar/schema-50-props.json) and a
 * 100-tool set (about 100 KB), and the token
 * mask of every step of a document written under the schema — first with empty caches, then
 * again as a second request with the same schema finds them.
 *
 *   node dist/scripts/bench/bench-grammar.js [-m MODEL.gguf]
 */
import * as path from 'node:path';
import { parseCliArgs } from '../../ts/cli/options.js';
import { loadTokenizer } from '../../ts/cli/load-tokenizer.js';
import { Constraint, maskHas } from '../../ts/grammar/constraint.js';
import { jsonGrammar, toolCallGrammar } from '../../ts/grammar/grammars.js';
import { vocabIndex } from '../../ts/grammar/vocab.js';
import type { Tokenizer } from '../../ts/tokenizer/tokenizer.js';
import { vocabFileTokenizer } from '../../ts/grammar/vocab-file.js';
import { ROOT } from '../../ts/paths.js';
import * as fs from 'node:fs';
import { fiftyPropsDoc, hundredTools } from '../lib/grammar-fixtures.js';

const args = parseCliArgs({ model: { type: 'string', short: 'm' } });
const tok: Tokenizer = args.model ? loadTokenizer(args.model) : vocabFileTokenizer(path.join(ROOT, 'fixtures/grammar/bpe-vocab-248k.bin.gz'));
console.log(`# bench-grammar: ${args.model ? path.basename(args.model) : 'bpe-vocab-248k'} (${tok.tokens.length} tokens), node ${process.version}, ${new Date().toISOString()}`);

let t0 = performance.now();
const idx = vocabIndex(tok);
console.log(`vocabulary index: ${(performance.now() - t0).toFixed(0)} ms (${idx.all.nodes} trie nodes; once per process)`);

t0 = performance.now();
const g = jsonGrammar(JSON.parse(fs.readFileSync(path.join(ROOT, 'fixtures/grammar/schema-50-props.json'), 'utf8')));
console.log(`compile 50-property schema: ${(performance.now() - t0).toFixed(2)} ms`);
const tools = hundredTools();
t0 = performance.now();
toolCallGrammar(tools);
console.log(`compile 100 tools (${JSON.stringify(tools).length} bytes of schema): ${(performance.now() - t0).toFixed(2)} ms`);

/** Longest-match spelling of a text in the vocabulary (a stand-in for the model's choices). */
function spell(text: string): number[] {
  const byBytes = new Map<string, number>();
  for (let id = 0; id < tok.tokens.length; id++) if (tok.types[id] === 1) { const b = tok.bytesOf(id); if (b.length <= 16) byBytes.set(Buffer.from(b).toString('latin1'), id); }
  const s = Buffer.from(text, 'utf8').toString('latin1');
  const out: number[] = [];
  for (let i = 0; i < s.length;) {
    for (let L = Math.min(16, s.length - i); L > 0; L--) { const id = byBytes.get(s.slice(i, i + L)); if (id !== undefined) { out.push(id); i += L; break; } if (L === 1) throw new Error(`no token for byte ${s.charCodeAt(i)}`); }
  }
  return out;
}

const ids = spell(fiftyPropsDoc());
for (const pass of ['cold caches', 'second request']) {
  const c = new Constraint(g, tok);
  const times: number[] = [];
  for (const id of ids) {
    const a = performance.now();
    const m = c.mask();
    times.push(performance.now() - a);
    if (!maskHas(m, id)) throw new Error(`the document's token ${id} is outside the mask`);
    c.accept(id);
  }
  if (!c.canEnd()) throw new Error('the document did not complete the grammar');
  times.sort((x, y) => x - y);
  const sum = times.reduce((x, y) => x + y, 0);
  console.log(`${pass}: ${ids.length} steps, ${c.computed} masks computed; per step mean ${(sum / ids.length).toFixed(3)} ms, p50 ${times[times.length >> 1].toFixed(3)}, p99 ${times[Math.floor(times.length * 0.99)].toFixed(3)}, max ${times[times.length - 1].toFixed(2)} ms`);
}
