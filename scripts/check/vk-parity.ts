/**
 * vk-parity: the Vulkan backend against the oracles on every case of every tiny model variant found
 * under a fixtures directory, plus chunked prefill vs token-by-token decode at 1…2048 tokens.
 * Used on the GPU machine (the unit tests run the short version on lavapipe).
 *
 *   node dist/scripts/check/vk-parity.js FIXTURES_DIR
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openEngine } from '../../ts/engine/index.js';
import { envEngineOptions } from '../../ts/cli/env.js';
import { prefillVsDecode } from './prefill-check.js';

// the engine switches of the environment (Q36_VK_COOPMAT, Q36_VK_MVQ, …): parity of each path
const env = envEngineOptions();

const dir = process.argv[2] ?? 'fixtures';
let failures = 0;
for (const model of ['tinyA', 'tinyR']) {
  const refPath = path.join(dir, model, 'reference.json');
  if (!fs.existsSync(refPath)) continue;
  const ref = JSON.parse(fs.readFileSync(refPath, 'utf8'));
  for (const variant of ['bf16', 'q8_0', 'q2', 'q2q4']) {
    const gguf = path.join(dir, model, `${model}-${variant}.gguf`);
    const logitsFile = path.join(dir, model, variant === 'bf16' ? 'reference-logits.f32' : `reference-logits-${variant}.f32`);
    if (!fs.existsSync(gguf) || !fs.existsSync(logitsFile)) continue;
    const logits = new Float32Array(fs.readFileSync(logitsFile).buffer.slice(0));
    const e = await openEngine({ model: gguf, ...env, backend: 'vulkan', ctx: 1024, kvTypes: { k: 'f16', v: 'f16' } });
    for (const [i, c] of (ref.cases as { prompt_ids: number[]; greedy_ids: number[]; logits_offset_bytes: number; vocab: number; kind: string }[]).entries()) {
      const s = e.newSession();
      const errs: number[] = [];
      await s.eval([...c.prompt_ids, ...c.greedy_ids], { onLogits: (row, p) => {
        let m = 0;
        for (let v = 0; v < c.vocab; v++) m = Math.max(m, Math.abs(row[v] - logits[c.logits_offset_bytes / 4 + p * c.vocab + v]));
        errs.push(m);
      } });
      s.dispose();
      errs.sort((x, y) => x - y);
      const p99 = errs[Math.floor(0.99 * (errs.length - 1))];
      const above = errs.filter((x) => x > 1e-2).length / errs.length;
      let greedy = '';
      if (variant === 'bf16') {
        const g = e.newSession();
        await g.eval(c.prompt_ids);
        const out: number[] = [];
        for (let k = 0; k < c.greedy_ids.length; k++) { const id = g.sample({ temperature: 0 }); out.push(id); await g.eval([id]); }
        g.dispose();
        const ok = JSON.stringify(out) === JSON.stringify(c.greedy_ids);
        greedy = ` greedy ${ok ? 'equal' : 'DIFFERENT'}`;
        if (!ok) failures++;
      }
      const ok = p99 <= 1e-2 && above <= 0.01;
      if (!ok) failures++;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${model} ${variant} case ${i} (${c.kind}, ${errs.length} positions): max ${errs[errs.length - 1].toExponential(2)} p99 ${p99.toExponential(2)}${greedy}`);
    }
    e.dispose();
  }
}
const gguf = path.join(dir, 'tinyR', 'tinyR-q2.gguf');
if (fs.existsSync(gguf)) {
  const e = await openEngine({ model: gguf, ...env, backend: 'vulkan', ctx: 2100, kvTypes: { k: 'q8_0', v: 'q4_0' } });
  console.log(e.describe().split('\n').filter((l) => /^(backend|prefill|matvecs)/.test(l)).join('\n'));
  for (const n of [1, 63, 64, 65, 512, 2048]) {
    const m = await prefillVsDecode(e, n);
    const ok = m <= 1e-3;
    if (!ok) failures++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} prefill ${n}: max |chunked − token-by-token| = ${m.toExponential(2)}`);
  }
  e.dispose();
}
console.log(`${failures === 0 ? 'all parity checks passed' : `${failures} parity checks failed`}`);
process.exitCode = failures ? 1 : 0;
