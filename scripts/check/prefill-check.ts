/**
 * The prefill-equals-decode check shared by vk-parity and the Vulkan tests: n tokens (fixed per n)
 * evaluated as one chunked prefill in one session and one token at a time in another; the result
 * is the largest |Δ| between the two sessions' last logits.
 */
import type { Engine } from '../../ts/engine/types.js';
import { Rng } from '../../ts/model/synth.js';

export async function prefillVsDecode(e: Engine, n: number): Promise<number> {
  const r = new Rng(n + 5);
  const toks = Array.from({ length: n }, () => r.int(0, 1032));
  const a = e.newSession(), b = e.newSession();
  try {
    await a.eval(toks);
    for (const t of toks) await b.eval([t]);
    const la = a.logits(), lb = b.logits();
    let m = 0;
    for (let i = 0; i < la.length; i++) m = Math.max(m, Math.abs(la[i] - lb[i]));
    return m;
  } finally {
    a.dispose();
    b.dispose();
  }
}
