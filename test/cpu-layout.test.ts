/**
 * The WASM memory layout's two sides: the tensor slots are generated from the model schema
 * (core-as/generated/slots.ts) and must equal the loader's (ts/engine/cpu/layout.ts, also from
 * the schema); the hyperparameter and session offsets are written twice (AssemblyScript constants
 * and their TypeScript twins) and must agree word for word.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GLOBAL_SLOTS, H, LAYER_SLOTS, N_SLOTS, SS } from '../ts/engine/cpu/layout.js';
import { requiredTensors } from '../ts/model/shape.js';
import { PRESETS, shapeOf } from '../ts/model/synthetic-model.js';

const ROOT = path.resolve(__dirname, '..');
function asConsts(file: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of fs.readFileSync(path.join(ROOT, file), 'utf8').matchAll(/export const (\w+)(?::\s*\w+)? = (\d+);/g)) m.set(x[1], Number(x[2]));
  return m;
}

describe('CPU layout: AssemblyScript and TypeScript agree', () => {
  const as = asConsts('core-as/engine/layout.ts');
  const slots = asConsts('core-as/generated/slots.ts');
  it('hyperparameter offsets', () => { for (const [k, v] of Object.entries(H)) expect(as.get(`H_${k}`), k).toBe(v); });
  it('session-table offsets', () => { for (const [k, v] of Object.entries(SS)) expect(as.get(`SS_${k}`), k).toBe(v); });
  it('tensor slots: one per schema tensor, the same numbers on both sides', () => {
    expect(slots.get('N_SLOTS')).toBe(N_SLOTS);
    const byNumber = new Map<number, string>();
    for (const line of fs.readFileSync(path.join(ROOT, 'core-as/generated/slots.ts'), 'utf8').split('\n')) {
      const m = /export const S_\w+ = (\d+); \/\/ (\S+)( \(global row\))?/.exec(line);
      if (m && !m[3]) byNumber.set(Number(m[1]), m[2]);
    }
    for (const [key, n] of Object.entries(LAYER_SLOTS)) expect(byNumber.get(n), key).toBe(key);
    expect(Object.keys(GLOBAL_SLOTS)).toEqual(['output_norm.weight', 'output.weight']);
    // every required layer tensor has a slot (the embedding is read on the host)
    for (const r of requiredTensors(shapeOf(PRESETS.tiny))) {
      const key = r.name.replace(/^blk\.\d+\./, '');
      if (r.name !== 'token_embd.weight') expect(LAYER_SLOTS[key] ?? GLOBAL_SLOTS[key], r.name).toBeTypeOf('number');
    }
  });
});
