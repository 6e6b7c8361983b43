import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { fixture, oracleLogitErrors } from './helpers.js';

/** Variants and the reference they must match (HF float64 for BF16, exact f32 on dequantized weights otherwise). */
const VARIANTS = [
  ['tinyA', 'bf16', 'reference-logits.f32'], ['tinyA', 'q8_0', 'reference-logits-q8_0.f32'], ['tinyA', 'q2', 'reference-logits-q2.f32'],
  ['tinyA', 'q2q4', 'reference-logits-q2q4.f32'], ['tinyR', 'bf16', 'reference-logits.f32'], ['tinyR', 'q2', 'reference-logits-q2.f32'],
] as const;

interface Case { kind: string; prompt_ids: number[]; greedy_ids: number[]; logits_offset_bytes: number; vocab: number }

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))];
}

describe.each(VARIANTS)('CPU engine vs oracle: %s %s', (model, variant, refName) => {
  const ref = JSON.parse(fs.readFileSync(fixture(model, 'reference.json'), 'utf8')) as { cases: Case[] };
  const logits = new Float32Array(fs.readFileSync(fixture(model, refName)).buffer.slice(0));
  let engine: Engine;

  it('loads', async () => {
    engine = await openEngine({ model: fixture(model, `${model}-${variant}.gguf`), backend: 'cpu', ctx: 1024, kvTypes: { k: 'f32', v: 'f32' } });
  });

  it.each(ref.cases.map((c, i) => [i, c.kind, c.prompt_ids.length + c.greedy_ids.length] as const))('case %i (%s, %i positions): p99 max|Δlogit| ≤ 2e-3, ≤ 1% of positions above', async (i) => {
    const c = ref.cases[i];
    const errs = await oracleLogitErrors(engine, c, logits);
    const sorted = errs.slice().sort((a, b) => a - b);
    const above = errs.filter((x) => x > 2e-3).length;
    console.log(`${model} ${variant} case ${i} ${c.kind}: max ${sorted[sorted.length - 1].toExponential(2)} p99 ${quantile(sorted, 0.99).toExponential(2)} p50 ${quantile(sorted, 0.5).toExponential(2)} (${errs.length} positions)`);
    expect(errs.length).toBe(c.prompt_ids.length + c.greedy_ids.length);
    expect(quantile(sorted, 0.99)).toBeLessThanOrEqual(2e-3);
    expect(above / errs.length).toBeLessThanOrEqual(0.01);
  });

  if (variant === 'bf16') {
    it('greedy generation from each prompt equals HF greedy_ids', async () => {
      for (const c of ref.cases) {
        const s = engine.newSession();
        await s.eval(c.prompt_ids);
        const out: number[] = [];
        for (let k = 0; k < c.greedy_ids.length; k++) {
          const id = s.sample({ temperature: 0 });
          out.push(id);
          await s.eval([id]);
        }
        s.dispose();
        expect(out, c.kind).toEqual(c.greedy_ids);
      }
    });
  }
});
