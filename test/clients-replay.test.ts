/**
 * The CI subset of `npm run test:clients`: the requests the real agents sent (recorded by
 * `node dist/scripts/qa/test-clients.js --record fixtures/clients`, versions in each file) replayed
 * against the server. Each must get a 200 or the provider's own context-length refusal — which
 * means the whole request (system blocks, mid-conversation system messages, every tool kind,
 * content parts) was parsed and rendered: the length is counted on the rendered prompt.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import { acceptable } from '../scripts/lib/client-check.js';
import { fixture } from './helpers.js';

const DIR = fixture('clients');
const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();
let app: FastifyInstance;

beforeAll(async () => {
  const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  ({ app } = await buildApp({ engine, defaultMaxTokens: 4 }));
});
afterAll(async () => { await app.close(); });

describe('requests recorded from the real agents', () => {
  it('covers the five agents', () => {
    expect(files.map((f) => f.replace('.json', ''))).toEqual(['claude-code', 'codex', 'opencode', 'pi', 'qwen-code']);
  });
  for (const f of files) {
    it(f.replace('.json', ''), async () => {
      const rec = JSON.parse(fs.readFileSync(path.join(DIR, f), 'utf8')) as { version: string; requests: { url: string; status: number; body: Record<string, unknown> }[] };
      expect(rec.requests.length).toBeGreaterThan(0);
      for (const q of rec.requests) {
        // (max_tokens capped: a replay that fits the context should not decode for minutes)
        const body = { ...q.body, ...('max_tokens' in q.body ? { max_tokens: 4 } : {}), ...('max_output_tokens' in q.body ? { max_output_tokens: 4 } : {}) };
        const r = await app.inject({ method: 'POST', url: q.url, payload: body });
        expect(acceptable({ url: q.url, status: r.statusCode, response: r.body }), `${f} ${q.url}: ${r.statusCode} ${r.body.slice(0, 300)}`).toBe(true);
      }
    });
  }
});
