/**
 * Prompt-cache scopes (q36-server --cache-scope, ts/server/scope.ts). Shared (the default): a
 * client sees through cached_tokens that another sent the same prompt before. Per key: a request
 * reuses only what requests with its own API key left — in the live session, the RAM cache and
 * the disk cache (a folder per scope) — and nothing of another key's is counted as cached.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openEngine } from '../ts/engine/index.js';
import type { Engine } from '../ts/engine/types.js';
import { buildApp } from '../ts/server/app.js';
import { requestScope } from '../ts/server/scope.js';
import { fixture, tmpDir } from './helpers.js';

let engine: Engine;
beforeAll(async () => { engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 }); });
afterAll(() => engine.dispose());

// a prompt long enough for the caches (RAM keeps sessions of 64 tokens or more, the disk 512 here)
const PROMPT = 'Here is a long shared system prompt about lighthouses and their keepers. '.repeat(12);

async function server(scope?: 'shared' | 'key', diskDir?: string): Promise<{ app: FastifyInstance; base: string; close: () => Promise<void> }> {
  const { app, ctx } = await buildApp({ engine, defaultMaxTokens: 4, cacheScope: scope, ...(diskDir ? { kvDisk: { dir: diskDir, spaceMiB: 256, minTokens: 64, alignTokens: 64, coldMaxTokens: 4000 } } : {}) });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base, close: async () => { await app.close(); ctx.coordinator.dispose(); } };
}

async function cached(base: string, key: string, user: string): Promise<number> {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'system', content: PROMPT }, { role: 'user', content: user }], max_tokens: 2, temperature: 0 }),
  });
  const j = await r.json() as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
  expect(r.status).toBe(200);
  return j.usage.prompt_tokens_details.cached_tokens;
}

describe('--cache-scope', () => {
  it('shared (the default): another key\'s request is served from the first one\'s prefix', async () => {
    const s = await server();
    try {
      await cached(s.base, 'alice', 'Question one?');
      expect(await cached(s.base, 'bob', 'Question two?')).toBeGreaterThan(100);
    } finally { await s.close(); }
  });

  it('key: another key reuses nothing; each key goes on reusing its own (from the RAM cache after the other took the session)', async () => {
    const s = await server('key');
    try {
      expect(await cached(s.base, 'alice', 'Question one?')).toBe(0);
      expect(await cached(s.base, 'bob', 'Question two?')).toBe(0);
      // alice asks again: her session comes back from the RAM cache (kept when bob took the live
      // session), then bob's from there; each request before the answer it reuses
      expect(await cached(s.base, 'alice', 'Question one?')).toBeGreaterThan(100);
      expect(await cached(s.base, 'bob', 'Question two?')).toBeGreaterThan(100);
      // a third key sees none of it, even for alice's very request
      expect(await cached(s.base, 'carol', 'Question one?')).toBe(0);
    } finally { await s.close(); }
  });

  it('key, with the disk cache: each scope\'s files in a folder of its own, named by a hash of the key, found again only by that key', async () => {
    const dir = path.join(tmpDir(), 'kv');
    const s = await server('key', dir);
    try {
      await cached(s.base, 'alice', 'Question one?');
      await cached(s.base, 'bob', 'Question two?');
      const folders = fs.readdirSync(dir).filter((f) => f.startsWith('scope-')).sort();
      const alice = `scope-${requestScope('key', { authorization: 'Bearer alice' })}`;
      expect(folders).toContain(alice);
      expect(folders.join(' ')).not.toMatch(/alice|bob/);
      expect(fs.readdirSync(path.join(dir, alice)).some((f) => f.endsWith('.kv'))).toBe(true);
      // no file in the shared folder: nothing of a scope is visible unscoped
      expect(fs.readdirSync(dir).filter((f) => f.endsWith('.kv'))).toEqual([]);
    } finally { await s.close(); }
    // a new server (no RAM, no live session): alice's prefix from her folder, carol's from nothing
    const t = await server('key', dir);
    try {
      expect(await cached(t.base, 'carol', 'Question six?')).toBe(0);
      expect(await cached(t.base, 'alice', 'Question seven?')).toBeGreaterThan(100);
    } finally { await t.close(); }
  });

  it('requestScope: undefined when shared; a stable 16-digit hash of the key, the same for Bearer and x-api-key, one for no key', () => {
    expect(requestScope('shared', { authorization: 'Bearer a' })).toBeUndefined();
    expect(requestScope(undefined, { authorization: 'Bearer a' })).toBeUndefined();
    const a = requestScope('key', { authorization: 'Bearer a' })!;
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(requestScope('key', { 'x-api-key': 'a' })).toBe(a);
    expect(requestScope('key', { authorization: 'Bearer b' })).not.toBe(a);
    expect(requestScope('key', {})).toBe(requestScope('key', {}));
  });
});
