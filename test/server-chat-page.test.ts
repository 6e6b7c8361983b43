/**
 * The chat page at `/` (ts/server/web/chat-page.ts): served to browsers, JSON to programs; one
 * self-contained file whose inline script and style are the ones its Content-Security-Policy
 * allows; the WebSocket chat accepts the page's own origin and a restored history in
 * `session.start`, and refuses a malformed one by name. (A real browser drives the page on the
 * H200's or a developer's machine: not in CI.)
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { FastifyInstance } from 'fastify';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import { originAllowed } from '../ts/server/origin.js';
import type { ServerContext } from '../ts/server/context.js';
import { fixture } from './helpers.js';

let app: FastifyInstance, ctx: ServerContext, base = '';
beforeAll(async () => {
  const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 2048 });
  ({ app, ctx } = await buildApp({ engine, defaultMaxTokens: 2 }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => { await app.close(); ctx.coordinator.dispose(); });

const page = () => fetch(`${base}/`, { headers: { accept: 'text/html,application/xhtml+xml' } });

describe('the chat page', () => {
  it('a browser gets the page, a program probing the base URL the JSON', async () => {
    const r = await page();
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html; charset=utf-8/);
    expect(await r.text()).toMatch(/^<!doctype html>[\s\S]*<title>QuarkStar chat<\/title>[\s\S]*\/v1\/chat\/ws/);
    const j = await (await fetch(`${base}/`)).json() as { name: string; endpoints: string[] };
    expect(j.name).toBe('q36-server');
    expect(j.endpoints).toContain('/v1/chat/ws');
  });

  it('self-contained: nothing loaded from elsewhere, and the policy allows exactly its own script and style', async () => {
    const r = await page();
    const html = await r.text(), csp = r.headers.get('content-security-policy')!;
    expect(html).not.toMatch(/\b(src|href)=|https?:\/\/|@import|url\(/);
    const script = /<script>([\s\S]*)<\/script>/.exec(html)![1], style = /<style>([\s\S]*)<\/style>/.exec(html)![1];
    const sha = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
    expect(csp).toContain(`script-src ${sha(script)};`);
    expect(csp).toContain(`style-src ${sha(style)};`);
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    // the script is valid JavaScript, and model text only ever goes in as text
    expect(() => new Function(script)).not.toThrow();
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
  });
});

/** Frames of one WebSocket chat connection, from an Origin. */
async function chat(origin?: string) {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/chat/ws`, { headers: origin ? { origin } : {} });
  const inbox: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (d) => { inbox.push(JSON.parse(String(d))); waiters.splice(0).forEach((w) => w()); });
  const next = (type: string) => new Promise<Record<string, unknown>>((resolve) => {
    const look = () => { const i = inbox.findIndex((m) => m.type === type || m.type === 'error'); if (i >= 0) resolve(inbox.splice(i, 1)[0]); else waiters.push(look); };
    look();
  });
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`))); });
  return { ws, next };
}

describe('the WebSocket chat as the page uses it', () => {
  it('the page\'s own origin is served (it is the Host the request came to); a foreign one is refused', async () => {
    const own = await chat(base);
    own.ws.close();
    await expect(chat('http://evil.example')).rejects.toThrow(/HTTP 403/);
  });

  it('same-origin beyond loopback (a server on --host 0.0.0.0 opened as http://192.168.1.5:8000/): the origin must be the Host itself', () => {
    const p = { any: false, allowed: [] };
    expect(originAllowed('http://192.168.1.5:8000', p, '192.168.1.5:8000')).toBe(true);
    expect(originAllowed('http://192.168.1.5:8000', p, '192.168.1.5:8001')).toBe(false);
    expect(originAllowed('http://192.168.1.6:8000', p, '192.168.1.5:8000')).toBe(false);
    expect(originAllowed('http://192.168.1.5:8000', p)).toBe(false);
    expect(originAllowed('file://192.168.1.5:8000', p, '192.168.1.5:8000')).toBe(false);
  });

  it('session.start restores a conversation: the first answer\'s prompt holds it', async () => {
    const prompt = async (history?: unknown[]) => {
      const c = await chat(base);
      c.ws.send(JSON.stringify({ type: 'session.start', temperature: 0, ...(history ? { history } : {}) }));
      expect((await c.next('session.ready')).type).toBe('session.ready');
      c.ws.send(JSON.stringify({ type: 'message', content: 'And the last one?' }));
      const done = await c.next('done') as { usage: { prompt_tokens: number } };
      c.ws.close();
      return done.usage.prompt_tokens;
    };
    const alone = await prompt();
    const restored = await prompt([{ role: 'user', content: 'Name three lighthouses.' }, { role: 'assistant', content: 'Eddystone, Pharos and Hook Head.' }]);
    expect(restored).toBeGreaterThan(alone + 10);
  });

  it('a malformed history, or one after the first message, is refused by name', async () => {
    const c = await chat(base);
    for (const history of [{}, [{ role: 'system', content: 'x' }], [{ role: 'user' }], [5]]) {
      c.ws.send(JSON.stringify({ type: 'session.start', history }));
      const e = await c.next('session.ready');
      expect(e.type).toBe('error');
      expect(String(e.message)).toMatch(/history must be an array of at most/);
    }
    c.ws.send(JSON.stringify({ type: 'session.start', max_tokens: 2, temperature: 0 }));
    await c.next('session.ready');
    c.ws.send(JSON.stringify({ type: 'message', content: 'Hi' }));
    await c.next('done');
    c.ws.send(JSON.stringify({ type: 'session.start', history: [] }));
    expect(String((await c.next('session.ready')).message)).toMatch(/history can only be given before the first message/);
    c.ws.close();
  });
});
