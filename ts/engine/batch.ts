/**
 * One token for each of several sessions (q36-server --batched-session): a native batched step
 * where the engine has one (Vulkan: weights read once for all rows), else the deterministic
 * ordered fallback — each session's own one-token eval, in the order given. Either way each row
 * computes what its session alone would (Vulkan: within the backend's tolerance, the same greedy
 * tokens), and a failure leaves no member half-advanced: every member is invalidated (emptied).
 */
import { BaseSession } from './session-base.js';
import type { BatchItem, Engine } from './types.js';

export type { BatchItem };

/** Whether evalBatch runs these items as one native step (else one after another). */
export function batchedNatively(engine: Engine, items: readonly BatchItem[]): boolean {
  return !!engine.decodeBatch && items.length >= 2 && items.length <= engine.batchRows;
}

export async function evalBatch(engine: Engine, items: readonly BatchItem[]): Promise<void> {
  if (new Set(items.map((i) => i.session)).size !== items.length) throw new Error('evalBatch: a session appears twice');
  if (items.length === 1) return items[0].session.eval([items[0].token], { mask: items[0].mask });
  // refusals before anything runs leave every member as it was
  for (const { session } of items) {
    if (session.tokens.length + 1 > session.ctx) throw new Error(`context full: ${session.tokens.length} + 1 tokens exceed ctx ${session.ctx}`);
  }
  const native = batchedNatively(engine, items);
  if (native && !items.every((i) => i.session instanceof BaseSession)) throw new Error('evalBatch: not an engine session');
  try {
    if (native) {
      for (const { session } of items) (session as BaseSession).beforeBatchedToken();
      await engine.decodeBatch!(items);
      for (const { session, token } of items) (session as BaseSession).afterBatchedToken(token);
    } else {
      for (const { session, token } of items) await session.eval([token]);
    }
  } catch (e) {
    for (const { session } of items) if (session instanceof BaseSession) session.invalidate();
    throw e;
  }
}
