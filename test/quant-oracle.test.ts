import { describe, expect, it } from 'vitest';
import { ALL_TYPES, GgmlType, rowBytes, typeInfo } from '../ts/gguf/index.js';
import { QuantKernels } from '../ts/core/quant.js';
import { fixture } from './helpers.js';
import { readQuantOracle } from '../scripts/lib/quant-oracle.js';

function readOracle(name: string) {
  const o = readQuantOracle(fixture('quant', `${name}.bin`));
  expect(o.magic).toBe('QORC');
  return o;
}

const q = new QuantKernels();
const SUPPORTED = ALL_TYPES.filter((t) => t.supported);

describe('dequantization is bit-exact against the oracle (gguf-py reference decoders)', () => {
  it('covers all 22 supported types', () => expect(SUPPORTED.map((t) => t.name).sort()).toEqual(
    ['BF16', 'F16', 'F32', 'IQ1_M', 'IQ1_S', 'IQ2_S', 'IQ2_XS', 'IQ2_XXS', 'IQ3_S', 'IQ3_XXS', 'IQ4_NL', 'IQ4_XS', 'Q2_K', 'Q3_K', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_0', 'Q5_1', 'Q5_K', 'Q6_K', 'Q8_0']));
  for (const ti of SUPPORTED) {
    it(ti.name, () => {
      const o = readOracle(ti.name.toLowerCase());
      expect(o.type).toBe(ti.id);
      expect(o.elems).toBe(ti.blockElems);
      expect(o.bytes).toBe(ti.blockBytes);
      const n = o.nBlocks * o.elems;
      const got = new Uint32Array(q.dequantize(ti.id, o.raw, n).buffer);
      let mismatches = 0, first = -1;
      for (let i = 0; i < n; i++) if (got[i] !== o.vals[i]) { mismatches++; if (first < 0) first = i; }
      expect(mismatches, `${ti.name}: ${mismatches} of ${n} values differ (first at ${first})`).toBe(0);
      expect(n).toBeGreaterThanOrEqual(256);
    });
  }
});
