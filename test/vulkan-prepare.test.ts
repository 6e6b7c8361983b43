/**
 * A prompt's next step's input rows, decoded while the current step runs (SessionBackend.prepare):
 * a forward takes them only when it runs exactly those tokens and no other session of the engine
 * prepared since (the engine keeps one such array). Each case compares a forward's logits with
 * those of the same tokens in a fresh session, which decodes its rows itself. And the step input,
 * a view of the device's memory, is refused once the engine is disposed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openEngine } from '../ts/engine/index.js';
import { BaseSession } from '../ts/engine/session-base.js';
import type { Engine } from '../ts/engine/types.js';
import type { VkSessionState } from '../ts/engine/vulkan/session-state.js';
import { fixture } from './helpers.js';

const e: Engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 256 });
afterAll(() => e.dispose());
const X = [11, 22, 33, 44, 55, 66], Y = [7, 8, 9, 10, 11, 12], Z = [101, 102, 103, 104, 105, 106];
const state = (s: ReturnType<Engine['newSession']>) => (s as BaseSession).backend as VkSessionState;

/** logits of the last row of tokens at position 0 in a fresh session */
async function fresh(tokens: number[]): Promise<Float32Array> {
  const s = e.newSession();
  try {
    const rows = await state(s).forward(tokens, 0, tokens.length - 1);
    return rows[0];
  } finally {
    s.dispose();
  }
}

describe('prepared step inputs (Vulkan)', () => {
  it('the prepared rows of the same tokens give the same logits; other tokens are decoded afresh', async () => {
    const want = { X: await fresh(X), Z: await fresh(Z) };
    expect(want.X).not.toEqual(want.Z);
    // (each forward in a session of its own: a forward advances its session's recurrent state)
    const a = e.newSession(), c = e.newSession();
    try {
      state(a).prepare(X);
      expect(await state(a).forward(X, 0, X.length - 1)).toEqual([want.X]);
      // prepared X, then a forward of Z: Z's own rows
      state(c).prepare(X);
      expect(await state(c).forward(Z, 0, Z.length - 1)).toEqual([want.Z]);
    } finally {
      a.dispose();
      c.dispose();
    }
  });

  it("another session's prepare since ours: ours are decoded afresh", async () => {
    const want = await fresh(X);
    const a = e.newSession(), b = e.newSession();
    try {
      state(a).prepare(X);
      state(b).prepare(Y);
      expect(await state(a).forward(X, 0, X.length - 1)).toEqual([want]);
    } finally {
      a.dispose();
      b.dispose();
    }
  });

  it('a bad token id in a prepare is refused by the forward that runs it, not by prepare', async () => {
    const a = e.newSession();
    try {
      expect(() => state(a).prepare([1, 1e9])).not.toThrow();
      await expect(state(a).forward([1, 1e9], 0, 1)).rejects.toThrow(/token id 1000000000 is outside the vocabulary/);
    } finally {
      a.dispose();
    }
  });
});

describe('the step input after dispose', () => {
  it("a session's eval after its engine is disposed is refused (the input view would be freed memory)", async () => {
    const e2 = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 64 });
    const s = e2.newSession();
    await s.eval([1, 2, 3]);
    e2.dispose();
    await expect(s.eval([4, 5, 6])).rejects.toThrow(/Vulkan device is disposed/);
    expect(() => e2.dispose()).not.toThrow();
  });
});
