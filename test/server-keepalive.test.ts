/**
 * Keep-alives during a long prefill are data events of each API (#45 item 3; #47), and ping frames
 * on both WebSockets: some clients reset their idle timers only on data events (Qwen Code's 240 s
 * stream timer ignored SSE comments and cut a cold 46K-token prefill). With a 10 ms keep-alive interval, a ~3K-token prompt on tinyA
 * is silent long enough for several: each stream carries its API's keep-alive before the first
 * token, and the official SDKs still parse the stream into the same answer as without streaming.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { FastifyInstance } from 'fastify';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import { Sse } from '../ts/server/sse.js';
import { fixture } from './helpers.js';

let engine: Engine, app: FastifyInstance, base = '';
const story = fs.readFileSync(path.resolve(__dirname, '..', 'fixtures/bench/lighthouse.txt'), 'utf8');
// a new prompt each time (no cache hit), ~3K tokens
let n = 0;
const longPrompt = () => `${n++} ${story.slice(0, 5500)}`;

beforeAll(async () => {
  engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  ({ app } = await buildApp({ engine, defaultMaxTokens: 4, keepAliveMs: 10, cacheRamMiB: 0 }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => { await app.close(); });

async function raw(url: string, body: unknown): Promise<string> {
  const r = await fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(r.status).toBe(200);
  return r.text();
}

describe('keep-alives during a long prefill are data events', () => {
  it('chat completions: empty-delta chunks before the first token', async () => {
    const t = await raw('/v1/chat/completions', { model: 'x', stream: true, max_tokens: 3, messages: [{ role: 'user', content: longPrompt() }] });
    const events = t.split('\n\n').filter((e) => e.startsWith('data: {'));
    const empties = events.filter((e) => /"delta":\{\}/.test(e));
    expect(empties.length).toBeGreaterThanOrEqual(2);
    // they come before any token, after the opening role chunk
    const firstToken = events.findIndex((e) => /"(content|reasoning_content)":"[^"]/.test(e));
    expect(events.indexOf(empties[0])).toBeLessThan(firstToken < 0 ? Infinity : firstToken);
    expect(t).not.toMatch(/^: keep-alive/m);
  });
  it('completions: empty text chunks', async () => {
    const t = await raw('/v1/completions', { model: 'x', stream: true, max_tokens: 3, prompt: longPrompt() });
    expect(t.split('\n\n').filter((e) => /"index":0,"text":"","finish_reason":null/.test(e)).length).toBeGreaterThanOrEqual(2);
  });
  it('Anthropic messages: ping events', async () => {
    const t = await raw('/v1/messages', { model: 'x', stream: true, max_tokens: 3, messages: [{ role: 'user', content: longPrompt() }] });
    expect(t.split('\n\n').filter((e) => e.startsWith('event: ping\ndata: {"type":"ping"}')).length).toBeGreaterThanOrEqual(2);
  });
  it('Responses: response.in_progress again, before any output item', async () => {
    const t = await raw('/v1/responses', { model: 'x', stream: true, max_output_tokens: 16, input: longPrompt() });
    const types = [...t.matchAll(/^event: ([a-z_.]+)$/gm)].map((m) => m[1]);
    expect(types.filter((x) => x === 'response.in_progress').length).toBeGreaterThanOrEqual(3);
    const firstItem = types.indexOf('response.output_item.added');
    expect(types.lastIndexOf('response.in_progress')).toBeLessThan(firstItem < 0 ? Infinity : firstItem);
  });
  it('the official SDKs parse the kept-alive streams into the non-streamed answers', async () => {
    const oa = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x' });
    const p = longPrompt();
    // streamed first (the cold prefill, with keep-alives), then the same request whole (cached prefix: the same greedy tokens)
    let text = '', reasoning = '', chunks = 0;
    for await (const c of await oa.chat.completions.create({ model: 'x', max_tokens: 4, temperature: 0, stream: true, messages: [{ role: 'user', content: p }] })) {
      chunks++;
      text += c.choices[0]?.delta?.content ?? '';
      reasoning += (c.choices[0]?.delta as { reasoning_content?: string })?.reasoning_content ?? '';
    }
    const whole = await oa.chat.completions.create({ model: 'x', max_tokens: 4, temperature: 0, messages: [{ role: 'user', content: p }] });
    expect(chunks).toBeGreaterThan(6);
    expect(text).toBe(whole.choices[0].message.content ?? '');
    expect(reasoning).toBe((whole.choices[0].message as { reasoning_content?: string }).reasoning_content ?? '');
    const an = new Anthropic({ baseURL: base, apiKey: 'x' });
    const q = longPrompt();
    const streamed = await an.messages.stream({ model: 'x', max_tokens: 4, temperature: 0, messages: [{ role: 'user', content: q }] }).finalMessage();
    const plain = await an.messages.create({ model: 'x', max_tokens: 4, temperature: 0, messages: [{ role: 'user', content: q }] });
    expect(streamed.content).toEqual(plain.content);
  });
  it('Sse sends the API keep-alive only when nothing else was written in the interval', async () => {
    const writes: string[] = [];
    const res = { writeHead() {}, write(s: string) { writes.push(s); }, end() {}, on() {} } as unknown as import('node:http').ServerResponse;
    const sse = new Sse(res, 5);
    let pings = 0;
    sse.onIdle = () => { pings++; sse.event('ping', { type: 'ping' }); };
    await new Promise((r) => setTimeout(r, 40));
    const idle = pings;
    const busy = setInterval(() => sse.data({ x: 1 }), 1);
    await new Promise((r) => setTimeout(r, 40));
    clearInterval(busy);
    sse.end();
    expect(idle).toBeGreaterThanOrEqual(2);
    expect(pings - idle).toBeLessThanOrEqual(1);
  });
});

describe('keep-alives during a long prefill on both WebSockets: ping frames', () => {
  /** ping frames the client receives between sending `frame` and the first answer frame of `first` type. */
  async function pingsBeforeAnswer(url: string, setup: string[], frame: Record<string, unknown>, first: (m: { type: string }) => boolean): Promise<number> {
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(url);
    await new Promise((r, j) => { ws.once('open', r); ws.once('error', j); });
    try {
      let pings = 0, counting = false;
      ws.on('ping', () => { if (counting) pings++; });
      const msgs: { type: string }[] = [];
      const waiters: (() => void)[] = [];
      ws.on('message', (d) => { msgs.push(JSON.parse(String(d))); waiters.splice(0).forEach((w) => w()); });
      const wait = (ok: (m: { type: string }) => boolean) => new Promise<void>((resolve) => {
        const look = () => { const i = msgs.findIndex(ok); if (i >= 0) { msgs.splice(0, i + 1); resolve(); } else waiters.push(look); };
        look();
      });
      for (const s of setup) { ws.send(s); await wait((m) => m.type === 'session.ready'); }
      counting = true;
      ws.send(JSON.stringify(frame));
      await wait((m) => first(m) || m.type === 'error');
      return pings;
    } finally {
      ws.close();
    }
  }
  it('WebSocket chat: pings before the first token', async () => {
    const n = await pingsBeforeAnswer(`${base.replace('http', 'ws')}/v1/chat/ws`, [JSON.stringify({ type: 'session.start', max_tokens: 4, temperature: 0 })],
      { type: 'message', content: longPrompt() }, (m) => ['token', 'reasoning', 'done'].includes(m.type));
    expect(n).toBeGreaterThanOrEqual(2);
  });
  it('Responses WebSocket mode: pings before the first output item', async () => {
    const n = await pingsBeforeAnswer(`${base.replace('http', 'ws')}/v1/responses`, [],
      { type: 'response.create', model: 'x', temperature: 0, max_output_tokens: 4, input: longPrompt() }, (m) => ['response.output_item.added', 'response.completed'].includes(m.type));
    expect(n).toBeGreaterThanOrEqual(2);
  });
});
