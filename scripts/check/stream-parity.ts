/**
 * SSD streaming against resident on a real GPU: the same prompt through a resident Vulkan engine
 * and through streaming ones (several cache sizes, staged and in-place reads), every logits row
 * compared byte for byte (prefill in chunks, then greedy decode). What test/vulkan-streaming does
 * on lavapipe, for any model file (the full synthetic ones included).
 *
 *   node dist/scripts/check/stream-parity.js MODEL [--tokens 600] [--decode 8] [--chunk 256] [--caches 1GB,2GB] [--kv f16]
 */
import { parseArgs } from 'node:util';
import { openEngine, type EngineOptions, type KvType } from '../../ts/engine/index.js';
import { parseSize } from '../../ts/cli/size.js';

const { positionals, values: a } = parseArgs({
  allowPositionals: true,
  options: { tokens: { type: 'string', default: '600' }, decode: { type: 'string', default: '8' }, chunk: { type: 'string', default: '256' }, caches: { type: 'string', default: '1GB,2GB' }, kv: { type: 'string', default: 'f16' } },
});
const model = positionals[0];
if (!model) { console.error('usage: stream-parity MODEL [--tokens N] [--decode N] [--chunk N] [--caches 1GB,2GB] [--kv f16]'); process.exit(2); }
const kv = a.kv as KvType;
const toks = Array.from({ length: Number(a.tokens) }, (_, i) => (i * 7919 + 13) % 200000);
const decode = Number(a.decode);

async function rows(o: Partial<EngineOptions>): Promise<{ rows: Float32Array[]; plan: string; ms: number }> {
  const e = await openEngine({ model, backend: 'vulkan', ctx: toks.length + decode + 8, kvTypes: { k: kv, v: kv }, chunk: Number(a.chunk), ...o });
  try {
    const vocab = e.shape.nVocab;
    const ids = toks.map((t) => t % vocab);
    const s = e.newSession(), out: Float32Array[] = [];
    const t0 = performance.now();
    await s.eval(ids);
    out.push(s.logits().slice());
    for (let i = 0; i < decode; i++) { await s.eval([s.sample({ temperature: 0 })]); out.push(s.logits().slice()); }
    const ms = performance.now() - t0;
    s.dispose();
    return { rows: out, plan: e.describe().split('\n').find((l) => l.startsWith('experts')) ?? 'resident', ms };
  } finally {
    e.dispose();
  }
}

const ref = await rows({});
console.log(`model ${model}: ${toks.length} tokens in chunks of ${a.chunk}, ${decode} greedy decode steps, ${kv} KV; resident ${ref.ms.toFixed(0)} ms`);
let bad = 0;
for (const c of a.caches.split(',')) {
  for (const direct of [false, true]) {
    const o: Partial<EngineOptions> = { streamExperts: true, expertCacheMiB: parseSize('--caches', c)! / 2 ** 20, vkStreamDirect: direct };
    const got = await rows(o);
    const same = got.rows.length === ref.rows.length && got.rows.every((r, i) => Buffer.from(r.buffer).equals(Buffer.from(ref.rows[i].buffer)));
    if (!same) bad++;
    console.log(`${c} ${direct ? 'in place' : 'staged'}: ${same ? 'identical' : 'DIFFERENT'} logits (${got.rows.length} rows), ${got.ms.toFixed(0)} ms; ${got.plan}`);
  }
}
process.exitCode = bad ? 1 : 0;
