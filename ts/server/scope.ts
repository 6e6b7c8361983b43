/**
 * Prompt-cache scopes (`--cache-scope`). The prompt cache is shared by default: any client's
 * request reuses what another client's left, and `cached_tokens` (and the response time) tell it
 * how much of its prompt someone sent before. With `key`, each API key is a scope of its own —
 * live sessions, RAM and disk entries are reused only by requests with the same key — named by a
 * hash of the key, never the key itself (it names folders of the disk cache). Requests without a
 * key share one scope.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export type CacheScope = 'shared' | 'key';
export const CACHE_SCOPES: readonly CacheScope[] = ['shared', 'key'];

/** The request's API key as the clients send it: `Authorization: Bearer KEY` or `x-api-key: KEY`. */
export function apiKeyOf(headers: IncomingHttpHeaders): string {
  return (headers.authorization ?? '').replace(/^Bearer\s+/i, '') || String(headers['x-api-key'] ?? '');
}

/** The request's cache scope: undefined (shared), or 16 hex digits of a hash of its API key. */
export function requestScope(mode: CacheScope | undefined, headers: IncomingHttpHeaders): string | undefined {
  if (mode !== 'key') return undefined;
  return createHash('sha256').update('q36 cache scope\0').update(apiKeyOf(headers)).digest('hex').slice(0, 16);
}
