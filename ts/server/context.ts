/** What every route needs: the coordinator, the tool memory, defaults. */
import type { SampleOptions } from '../engine/types.js';
import type { Coordinator } from './coordinator.js';
import type { ToolMemory } from './tool-memory.js';
import type { DiskCache } from './kv-disk/disk-cache.js';
import type { CacheScope } from './scope.js';

export interface ServerContext {
  coordinator: Coordinator;
  tools: ToolMemory;
  modelName: string;
  sampling: SampleOptions;
  defaultMaxTokens: number;
  disk?: DiskCache;
  /** ms of stream silence before a keep-alive (default sse.ts KEEP_ALIVE_MS) */
  keepAliveMs?: number;
  /** prompt-cache scope: shared (default) or one per API key (scope.ts) */
  cacheScope?: CacheScope;
}

/** Tool ids in a client history that this process does not know are looked up in the disk cache. */
export function recallToolIds(ctx: ServerContext, ids: string[]): void {
  if (!ctx.disk) return;
  const missing = ids.filter((id) => !ctx.tools.recall(id));
  for (const [id, block] of ctx.disk.findTools(missing)) ctx.tools.remember([id], { reasoning: '', content: block });
}

/** Every tool-call id mentioned in a request body (OpenAI tool_calls / Anthropic tool_use). */
export function toolIdsIn(messages: unknown): string[] {
  const ids: string[] = [];
  const walk = (x: unknown) => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === 'object') {
      const o = x as Record<string, unknown>;
      if ((o.type === 'tool_use' || o.type === 'function') && typeof o.id === 'string') ids.push(o.id);
      for (const v of Object.values(o)) if (typeof v === 'object') walk(v);
    }
  };
  walk(messages);
  return ids;
}

export const MODEL_ID = 'qwen3.6-35b-a3b';
