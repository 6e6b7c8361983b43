/**
 * q36-server --batched-session N: several live sessions (slots). Requests served at once must
 * each get what they get alone (greedy), their decode tokens advance in shared steps, excess
 * requests wait or are refused cleanly (503 + Retry-After), none lost or mixed up; a request takes
 * the slot holding its prefix; an unmatched slot goes to the disk cache before reuse; a failed
 * batched step fails its requests and the server goes on.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import type { ServerContext } from '../ts/server/context.js';
import { fixture, tmpDir, withFailingReads } from './helpers.js';

const PROMPTS = [
  'The lighthouse keeper wrote in his log that the storm',
  'A recipe for bread begins with flour, water and',
  'In the year 2040 the first city on the moon',
  'The river ran past the old mill where the children',
  'Every morning the baker opened the shop and',
  'The train left the station at dawn carrying',
];

interface Completion { status: number; text?: string; cached?: number; retryAfter?: string | null; error?: string }

async function complete(base: string, prompt: string, maxTokens = 10): Promise<Completion> {
  const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', prompt, max_tokens: maxTokens, temperature: 0 }) });
  const j = await r.json() as { choices?: { text: string }[]; usage?: { prompt_tokens_details: { cached_tokens: number } }; error?: { message: string } };
  return { status: r.status, text: j.choices?.[0].text, cached: j.usage?.prompt_tokens_details.cached_tokens, retryAfter: r.headers.get('retry-after'), error: j.error?.message };
}

describe('Vulkan, --batched-session 4 (lavapipe, tinyA q2)', () => {
  let app: FastifyInstance, ctx: ServerContext, base = '', engine: Engine;
  const alone = new Map<string, string>();
  beforeAll(async () => {
    engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 512, kvTypes: { k: 'q8_0', v: 'q4_0' }, batchRows: 4, sessions: 4 });
    ({ app, ctx } = await buildApp({ engine, slots: 4, maxQueue: 16, defaultMaxTokens: 10, cacheRamMiB: 0 }));
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    // each prompt alone (one request at a time): the reference texts
    for (const p of PROMPTS) { const r = await complete(base, p); expect(r.status).toBe(200); alone.set(p, r.text!); }
  }, 600_000);
  afterAll(async () => { await app?.close(); ctx?.coordinator.dispose(); engine?.dispose(); });

  it('requests served at once each get the text they get alone, in shared decode steps', async () => {
    const before = { ...ctx.coordinator.exec.stats };
    const rs = await Promise.all(PROMPTS.slice(0, 4).map((p) => complete(base, p)));
    rs.forEach((r, i) => { expect(r.status).toBe(200); expect(r.text, PROMPTS[i]).toBe(alone.get(PROMPTS[i])); });
    const x = ctx.coordinator.exec.stats;
    // steps that advanced several sessions at once happened
    expect(x.rows - before.rows).toBeGreaterThan(x.steps - before.steps);
    expect(x.largest).toBeGreaterThanOrEqual(2);
  }, 600_000);

  it('32 concurrent clients: 4 served at a time, 16 wait, the rest get 503 + Retry-After; none lost or mixed up', async () => {
    const asked = Array.from({ length: 32 }, (_, i) => PROMPTS[i % PROMPTS.length]);
    const rs = await Promise.all(asked.map((p) => complete(base, p, 6)));
    const served = rs.filter((r) => r.status === 200), refused = rs.filter((r) => r.status === 503);
    expect(served.length + refused.length).toBe(32);
    // at least the slots plus the queue were admitted (more when some finished before the last arrived)
    expect(served.length).toBeGreaterThanOrEqual(20);
    for (const r of refused) { expect(r.retryAfter).toBe('1'); expect(r.error).toMatch(/busy/); }
    rs.forEach((r, i) => { if (r.status === 200) expect(r.text, `client ${i}`).toBe(alone.get(asked[i])!.slice(0, r.text!.length)); });
    // 6 of the 10 tokens: the served texts are prefixes of the references (tokens, not characters, are cut)
    expect(ctx.coordinator.busySlots).toBe(0);
    expect(ctx.coordinator.waiting).toBe(0);
  }, 600_000);

  it('a failed batched step fails the requests in it; the server keeps serving them correctly after', async () => {
    const spy = vi.spyOn(engine, 'decodeBatch').mockRejectedValueOnce(new Error('VK_ERROR_DEVICE_LOST (injected)'));
    try {
      const rs = await Promise.all(PROMPTS.slice(0, 3).map((p) => complete(base, p)));
      expect(rs.some((r) => r.status === 500 && /DEVICE_LOST/.test(r.error ?? ''))).toBe(true);
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
    const again = await Promise.all(PROMPTS.slice(0, 3).map((p) => complete(base, p)));
    again.forEach((r, i) => { expect(r.status).toBe(200); expect(r.text).toBe(alone.get(PROMPTS[i])); });
  }, 600_000);

  it('/metrics and /props show the slots and the shared steps', async () => {
    const m = await (await fetch(`${base}/metrics`)).text();
    expect(m).toMatch(/^q36_slots 4$/m);
    expect(m).toMatch(/^q36_decode_steps_total \d+$/m);
    const props = await (await fetch(`${base}/props`)).json() as { batched_sessions: number; batched_step_rows: number };
    expect(props.batched_sessions).toBe(4);
    expect(props.batched_step_rows).toBe(4);
  });
});

describe('CPU, --batched-session 2: slot assignment by prefix; an unmatched slot persists to disk before reuse', () => {
  let app: FastifyInstance, base = '', bLive = '';
  const dir = tmpDir(), trace = path.join(tmpDir(), 'trace.jsonl');
  const events = () => fs.readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  // long enough prompts that the disk policy keeps them (minTokens 16)
  const long = (p: string) => `${p} ${'and the wind kept blowing over the hills '.repeat(4)}`;
  beforeAll(async () => {
    const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 1024 });
    ({ app } = await buildApp({ engine, slots: 2, trace, defaultMaxTokens: 4, cacheRamMiB: 0, kvDisk: { dir, spaceMiB: 64, minTokens: 16 } }));
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  }, 600_000);
  afterAll(async () => { await app?.close(); });

  it('each conversation goes on in the slot that holds it', async () => {
    const [a, b] = [long(PROMPTS[0]), long(PROMPTS[1])];
    const [ra, rb] = await Promise.all([complete(base, a, 4), complete(base, b, 4)]);
    expect([ra.status, rb.status]).toEqual([200, 200]);
    const slotOf = (prompt: string) => events().filter((e) => e.event === 'request' && e.prompt === prompt).map((e) => e.slot).pop();
    const sa = slotOf(a), sb = slotOf(b);
    expect(new Set([sa, sb])).toEqual(new Set([0, 1]));
    // each continuation (its prompt + what it generated + more) lands on its own slot and reuses it
    const a2 = `${a}${ra.text} Then`, b2 = `${b}${rb.text} Then`;
    const rb2 = await complete(base, b2, 2), ra2 = await complete(base, a2, 2);
    bLive = `${b2}${rb2.text}`;
    expect(slotOf(a2)).toBe(sa);
    expect(slotOf(b2)).toBe(sb);
    expect(ra2.cached).toBeGreaterThan(20);
    expect(rb2.cached).toBeGreaterThan(20);
  }, 600_000);

  it('a new conversation takes the least recently used slot, whose conversation is saved to disk first, and comes back from there', async () => {
    const c = long(PROMPTS[2]);
    const rc = await complete(base, c, 2);
    expect(rc.status).toBe(200);
    const ev = events();
    const evicted = ev.filter((e) => e.event === 'disk-save' && e.reason === 'evict');
    expect(evicted.length).toBeGreaterThanOrEqual(1);
    expect(fs.readdirSync(dir).length).toBeGreaterThanOrEqual(1);
    // the evicted conversation (b's, the least recently used) goes on: loaded from the disk cache
    const b3 = `${bLive} Later`;
    const rb3 = await complete(base, b3, 2);
    expect(rb3.status).toBe(200);
    expect(events().some((e) => e.event === 'disk-load')).toBe(true);
    expect(rb3.cached).toBeGreaterThan(20);
  }, 600_000);
});

describe('CPU, streamed experts: a read error on the model file mid-request', () => {
  it('fails that request with a message naming the file; the server keeps serving, correctly', async () => {
    const engine = await openEngine({ model: fixture('tinyA/tinyA-q2q4.gguf'), backend: 'cpu', ctx: 512, streamExperts: true, expertCacheSlots: 8 });
    const { app } = await buildApp({ engine, slots: 2, defaultMaxTokens: 6, cacheRamMiB: 0 });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const ok = await complete(base, PROMPTS[4], 6);
      expect(ok.status).toBe(200);
      const bad = await withFailingReads(1, () => complete(base, PROMPTS[5], 6));
      expect(bad.status).toBe(500);
      expect(bad.error).toMatch(/tinyA-q2q4\.gguf: EIO: i\/o error/);
      // the same requests again: served, and the first one's text is what it was
      const again = await complete(base, PROMPTS[4], 6);
      expect(again.status).toBe(200);
      expect(again.text).toBe(ok.text);
      expect((await complete(base, PROMPTS[5], 6)).status).toBe(200);
    } finally {
      await app.close();
    }
  }, 600_000);
});
