/**
 * The Vulkan weight decoders (shaders/decode.glsl) against the oracle's dequantized values, bit for
 * bit, through each kernel that decodes (scripts/lib/decoder-check.ts): a wrong bit, nibble, sign
 * or table entry fails by value. On a GPU: node dist/scripts/check/vk-decoders.js.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { MATVEC } from '../ts/engine/vulkan/weights.js';
import { loadAddon } from '../ts/vk/addon.js';
import { BLOCK_TYPES, DecoderChecker, KERNEL_PATHS } from '../scripts/lib/decoder-check.js';
import { fixture } from './helpers.js';

describe('Vulkan decoders reproduce the oracle values exactly', () => {
  const dev = new (loadAddon().Device)(-1);
  const checker = new DecoderChecker(dev, fixture('quant'));
  afterAll(() => dev.dispose());

  it('covers every block type the CPU decodes', () => expect(BLOCK_TYPES.map((t) => MATVEC[t.id])).toEqual(BLOCK_TYPES.map((t) => t.name.toLowerCase())));

  for (const t of BLOCK_TYPES) {
    for (const kernel of KERNEL_PATHS) {
      it(`${t.name} through ${kernel}`, () => {
        const r = checker.check(t, kernel);
        // the kernel the test meant to exercise is the one that ran
        // (one-row matvecs come as matvec, matvec2 or matvec1: rows per workgroup; mv as mv)
        expect(r.shader).toMatch(new RegExp(`^${kernel}${kernel === 'matvec' ? '[12]?' : ''}_${MATVEC[t.id]}$`));
        expect(r.checked).toBeGreaterThan(0);
        expect(r.bad, `${t.name}/${kernel}: ${r.bad} values differ (${r.first})`).toBe(0);
      });
    }
  }
});
