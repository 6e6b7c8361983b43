/**
 * The server against hostile and careless clients (reliability issue): every client mistake is a
 * 4xx in the API's own shape, WebSocket frames are validated and origins checked, the queue is
 * bounded, requests can time out, and each request leaves one log line.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import type { FastifyInstance } from 'fastify';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import type { ServerContext } from '../ts/server/context.js';
import { jsonDepth } from '../ts/server/validate.js';
import { fixture, tmpDir } from './helpers.js';

let engine: Engine, app: FastifyInstance, ctx: ServerContext, base = '';
const trace = path.join(tmpDir(), 'trace.jsonl');
const logs: string[] = [];
const requestLines: string[] = [];

beforeAll(async () => {
  engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  ({ app, ctx } = await buildApp({ engine, trace, defaultMaxTokens: 8, bodyLimit: 4 << 20, maxQueue: 2, log: (m) => logs.push(m), requestLog: (l) => requestLines.push(l) }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => { await app.close(); });

const post = (url: string, body: unknown) => fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
const user = [{ role: 'user', content: 'hi' }];
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

describe('HTTP: client mistakes are 4xx in the API shape, never 500', () => {
  const cases: [string, string, unknown][] = [
    ['properties null (OpenAI)', '/v1/chat/completions', { messages: user, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: null } } } }] }],
    ['anyOf 5 (OpenAI)', '/v1/chat/completions', { messages: user, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { anyOf: 5 } } } } }] }],
    ['oneOf [null] (OpenAI)', '/v1/chat/completions', { messages: user, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { oneOf: [null] } } } } }] }],
    ['properties null (Anthropic)', '/v1/messages', { max_tokens: 4, messages: user, tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: null } } }] }],
    ['anyOf 5 (Anthropic)', '/v1/messages', { max_tokens: 4, messages: user, tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: { anyOf: 5 } } } }] }],
    ['oneOf [null] (Anthropic)', '/v1/messages', { max_tokens: 4, messages: user, tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: { oneOf: [null] } } } }] }],
    ['content [null] (Anthropic)', '/v1/messages', { max_tokens: 4, messages: [{ role: 'user', content: [null] }] }],
    ['assistant content [null] (Anthropic)', '/v1/messages', { max_tokens: 4, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [null] }, { role: 'user', content: 'b' }] }],
    ['tool_result content [null] (Anthropic)', '/v1/messages', { max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: [null] }] }] }],
    ['system [null] (Anthropic)', '/v1/messages', { max_tokens: 4, system: [null], messages: user }],
    ['messages nested 100k deep', '/v1/chat/completions', `{"messages":${deep(100_000)}}`],
    ['parameters nested 5000 deep', '/v1/chat/completions', `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}}]}`],
    ['Responses input nested deep', '/v1/responses', `{"input":${deep(50_000)}}`],
    ['max_tokens as a string', '/v1/chat/completions', { messages: user, max_tokens: '5' }],
    ['messages not an array', '/v1/chat/completions', { messages: 'hi' }],
    ['empty body', '/v1/chat/completions', ''],
    ['tools not objects (Responses)', '/v1/responses', { input: 'hi', tools: [null] }],
    ['prompt a number (completions)', '/v1/completions', { prompt: 5 }],
    // #45 item 15: OpenAI's types and ranges; values the sampler does not implement refused by name, not ignored
    ['presence_penalty a string', '/v1/chat/completions', { messages: user, presence_penalty: 'high' }],
    ['frequency_penalty out of range', '/v1/chat/completions', { messages: user, frequency_penalty: 3 }],
    ['presence_penalty not implemented', '/v1/chat/completions', { messages: user, presence_penalty: 0.5 }],
    ['logit_bias with a non-id key', '/v1/chat/completions', { messages: user, logit_bias: { abc: 1 } }],
    ['logit_bias out of range', '/v1/chat/completions', { messages: user, logit_bias: { 5: 500 } }],
    ['logit_bias not implemented', '/v1/completions', { prompt: 'hi', logit_bias: { 5: -100 } }],
    ['an Anthropic text block whose text is an object', '/v1/messages', { max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'text', text: {} }] }] }],
    // #45 item 14: prototype poisoning is refused as fastify refuses it, not silently dropped
    ['a "__proto__" key (prototype poisoning)', '/v1/chat/completions', '{"messages":[{"role":"user","content":"hi"}],"__proto__":{"polluted":true}}'],
    ['a "constructor.prototype" key', '/v1/chat/completions', '{"messages":[{"role":"user","content":"hi"}],"x":{"constructor":{"prototype":{"polluted":true}}}}'],
    ['a "__proto__" key (Anthropic)', '/v1/messages', '{"max_tokens":4,"messages":[{"role":"user","content":"hi","__proto__":{"a":1}}]}'],
    // #45 item 13: arguments nested 5000 deep inside the arguments string (an assistant turn the client sends back)
    ['tool-call arguments string nested 5000 deep', '/v1/chat/completions', { messages: [...user, { role: 'assistant', content: null, tool_calls: [{ id: 'call_unknown', type: 'function', function: { name: 'f', arguments: `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}` } }] }, { role: 'tool', tool_call_id: 'call_unknown', content: 'ok' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'array' } } } } }] }],
  ];
  for (const [name, url, body] of cases) {
    it(name, async () => {
      const r = await post(url, body);
      const j = await r.json() as Record<string, unknown>;
      expect(r.status, JSON.stringify(j)).toBe(400);
      if (url === '/v1/messages') expect(j).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      else expect(j).toMatchObject({ error: { type: 'invalid_request_error' } });
    });
  }

  it('parameters named like Object.prototype members, with an unknown tool-call id, are kept as the client sent them (#45 item 13)', async () => {
    const props = { constructor: { type: 'string' }, toString: { type: 'string' }, hasOwnProperty: { type: 'string' }, valueOf: { type: 'string' } };
    const r = await post('/v1/chat/completions', {
      max_tokens: 2, temperature: 0,
      messages: [...user, { role: 'assistant', content: null, tool_calls: [{ id: 'call_never_seen', type: 'function', function: { name: 'g', arguments: JSON.stringify({ valueOf: 'v', toString: 't', constructor: 'c' }) } }] }, { role: 'tool', tool_call_id: 'call_never_seen', content: 'done' }],
      tools: [{ type: 'function', function: { name: 'g', parameters: { type: 'object', properties: props } } }],
    });
    const j = await r.json() as { choices?: unknown[] };
    expect(r.status, JSON.stringify(j)).toBe(200);
    expect(j.choices?.length).toBe(1);
  });

  it('zero penalties and an empty logit_bias (what the SDKs may send) are served', async () => {
    const r = await post('/v1/chat/completions', { messages: user, max_tokens: 2, presence_penalty: 0, frequency_penalty: 0, logit_bias: {} });
    expect(r.status).toBe(200);
    const j = await (await post('/v1/chat/completions', { messages: user, presence_penalty: 0.5 })).json() as { error: { message: string; param: string } };
    expect(j.error.message).toMatch(/presence_penalty is not implemented by this server/);
    expect(j.error.param).toBe('presence_penalty');
  });

  it('a prompt too long at any tokenization is refused before it is tokenized (#45 item 12)', async () => {
    const spy = vi.spyOn(engine.tokenizer, 'encode');
    try {
      const r = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x'.repeat(3_500_000) }] });
      const j = await r.json() as { error: { code?: string; message: string } };
      expect(r.status).toBe(400);
      expect(j.error.message).toMatch(/maximum context length is 4096 tokens/);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it('the depth counter skips strings and escapes', () => {
    expect(jsonDepth('{"a":"[[[[\\"[[["}')).toBe(1);
    expect(jsonDepth('[[{"x":[1]}]]')).toBe(4);
  });

  it('a Host that is not loopback or --host is refused: a DNS-rebinding page cannot read /props (#45 item 16)', async () => {
    const get = (host: string) => new Promise<number>((resolve, reject) => {
      const u = new URL(base);
      http.get({ hostname: u.hostname, port: u.port, path: '/props', headers: { host } }, (r) => { r.resume(); resolve(r.statusCode ?? 0); }).on('error', reject);
    });
    expect(await get(`evil.example:${new URL(base).port}`)).toBe(403);
    expect(await get(`localhost:${new URL(base).port}`)).toBe(200);
    expect(await get(`127.0.0.1:${new URL(base).port}`)).toBe(200);
    const { app: lan } = await buildApp({ engine, hosts: { any: false, names: ['box.lan'] } });
    const lanBase = await lan.listen({ host: '127.0.0.1', port: 0 });
    try {
      const code = await new Promise<number>((resolve, reject) => {
        http.get({ hostname: '127.0.0.1', port: new URL(lanBase).port, path: '/props', headers: { host: 'box.lan:8000' } }, (r) => { r.resume(); resolve(r.statusCode ?? 0); }).on('error', reject);
      });
      expect(code).toBe(200);
    } finally {
      await lan.close();
    }
  });

  it('--allow-origin without --cors answers that origin\'s preflight (it was a 404)', async () => {
    const { app: a2 } = await buildApp({ engine, allowOrigins: ['https://chat.example'] });
    const b2 = await a2.listen({ host: '127.0.0.1', port: 0 });
    try {
      const pre = await fetch(`${b2}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://chat.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('https://chat.example');
      const other = await fetch(`${b2}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
      expect(other.status).toBe(403);
    } finally {
      await a2.close();
    }
  });

  it('a browser page of another origin is refused (403); loopback pages and programs are served', async () => {
    const evil = await fetch(`${base}/v1/models`, { headers: { origin: 'https://evil.example' } });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    expect((await fetch(`${base}/v1/models`, { headers: { origin: 'http://localhost:3000' } })).status).toBe(200);
    expect((await fetch(`${base}/v1/models`)).status).toBe(200);
  });
});

/** A WebSocket client that collects frames. */
async function wsClient(headers: Record<string, string> = {}, route = '/v1/chat/ws') {
  const ws = new WebSocket(`${base.replace('http', 'ws')}${route}`, { headers });
  const inbox: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (d) => { inbox.push(JSON.parse(String(d))); waiters.splice(0).forEach((w) => w()); });
  const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: String(reason) })));
  const next = (type: string) => new Promise<Record<string, unknown>>((resolve) => {
    const look = () => { const i = inbox.findIndex((m) => m.type === type); if (i >= 0) resolve(inbox.splice(i, 1)[0]); else waiters.push(look); };
    look();
  });
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
  return { ws, next, closed, inbox };
}

describe('WebSocket: frames validated, origins checked, close codes', () => {
  it('a null frame (and other bad frames) get an error frame; the server and the socket keep working', async () => {
    const c = await wsClient();
    for (const bad of ['null', '5', '"x"', '[]', '{"type":5}', 'not json', '{"type":"message","content":7}', '{"type":"session.start","max_tokens":-1}', '{"type":"session.start","tools":[null]}', '{"type":"session.start","tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"a":null}}}}]}', deep(10_000)]) {
      c.ws.send(bad);
      const e = await c.next('error');
      expect(e.code, bad).toMatch(/^invalid_(request|json)$/);
    }
    c.ws.send(JSON.stringify({ type: 'session.start', max_tokens: 2, temperature: 0 }));
    expect((await c.next('session.ready')).model).toBe('qwen3.6-35b-a3b');
    c.ws.send(JSON.stringify({ type: 'message', content: 'Hello' }));
    expect((await c.next('done')).finish_reason).toBeDefined();
    c.ws.close();
    expect((await fetch(`${base}/v1/models`)).status).toBe(200);
  });

  it('a message refused because a generation is running does not enter the conversation', async () => {
    const c = await wsClient();
    c.ws.send(JSON.stringify({ type: 'session.start', max_tokens: 3000, temperature: 0 }));
    await c.next('session.ready');
    c.ws.send(JSON.stringify({ type: 'message', content: 'Hello' })); // (~1300 tokens from tinyA at temperature 0)
    c.ws.send(JSON.stringify({ type: 'message', content: 'REFUSED-WHILE-BUSY' }));
    expect(String((await c.next('error')).message)).toMatch(/already running/);
    c.ws.send(JSON.stringify({ type: 'cancel' }));
    await c.next('done');
    c.ws.send(JSON.stringify({ type: 'session.start', max_tokens: 2 }));
    await c.next('session.ready');
    c.ws.send(JSON.stringify({ type: 'message', content: 'Next one' }));
    await c.next('done');
    const prompts = fs.readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.event === 'request');
    const last = prompts[prompts.length - 1].prompt as string;
    expect(last).toContain('Next one');
    expect(last).not.toContain('REFUSED-WHILE-BUSY');
    c.ws.close();
  });

  it('binary frames close with 1008, oversized frames with 1009', async () => {
    const a = await wsClient();
    a.ws.send(Buffer.from([1, 2, 3]));
    expect((await a.closed).code).toBe(1008);
    const b = await wsClient();
    b.ws.send('x'.repeat((8 << 20) + 1));
    expect((await b.closed).code).toBe(1009);
  });

  it('an upgrade from another origin is refused with 403', async () => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/chat/ws`, { headers: { origin: 'https://evil.example' } });
    const status = await new Promise<number>((resolve) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => { /* reported through unexpected-response */ });
    });
    expect(status).toBe(403);
    const ok = await wsClient({ origin: 'http://127.0.0.1:8080' });
    ok.ws.close();
  });
});

describe('Responses WebSocket mode: hostile events', () => {
  it('one socket cannot queue more response.create events than --max-queue (#45 item 12)', async () => {
    const c = await wsClient({}, '/v1/responses');
    for (let i = 0; i < 12; i++) c.ws.send(JSON.stringify({ type: 'response.create', input: `Hello ${i}`, max_output_tokens: 2, temperature: 0 }));
    const e = await c.next('error') as { status: number; error: { code: string; message: string } };
    expect(e.status).toBe(503);
    expect(e.error.message).toMatch(/already queued on this socket \(at most 2\)/);
    c.ws.close();
    await c.closed;
  });

  it('bad events get error events (the API\'s error shape); the socket keeps working', async () => {
    const c = await wsClient({}, '/v1/responses');
    const bad = ['null', '5', '"x"', '[]', '{"type":5}', 'not json', '{"type":"response.create"}', '{"type":"response.create","input":7}',
      '{"type":"response.create","input":"hi","tools":[null]}', '{"type":"response.create","input":"hi","max_output_tokens":1.5}', '{"type":"response.create","input":"hi","stream_id":3}',
      '{"type":"response.create","input":[5]}', '{"type":"response.create","input":"hi","tools":[{"type":"function","name":"f","parameters":{"properties":{"a":null}}}]}', deep(10_000)];
    for (const b of bad) {
      c.ws.send(b);
      const e = await c.next('error') as { status: number; error: { code: string; message: string } };
      expect(e.status, b).toBe(400);
      expect(e.error.code, b).toMatch(/^invalid_(request|json)$/);
      expect(e.error.message.length).toBeGreaterThan(5);
    }
    c.ws.send(JSON.stringify({ type: 'response.create', input: 'Hello', max_output_tokens: 2, temperature: 0 }));
    const done = await new Promise<Record<string, unknown>>((resolve) => {
      const look = () => { const m = c.inbox.find((x) => x.type === 'response.completed' || x.type === 'response.incomplete'); if (m) resolve(m); else setTimeout(look, 5); };
      look();
    });
    expect(done.type).toMatch(/response\.(completed|incomplete)/);
    c.ws.close();
  });

  it('binary frames close with 1008, oversized with 1009, other origins are refused with 403', async () => {
    const a = await wsClient({}, '/v1/responses');
    a.ws.send(Buffer.from([1, 2, 3]));
    expect((await a.closed).code).toBe(1008);
    const b = await wsClient({}, '/v1/responses');
    b.ws.send('x'.repeat((8 << 20) + 1));
    expect((await b.closed).code).toBe(1009);
    const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/responses`, { headers: { origin: 'https://evil.example' } });
    const status = await new Promise<number>((resolve) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => { /* reported through unexpected-response */ });
    });
    expect(status).toBe(403);
  });
});

describe('admission, timeouts, request log', () => {
  it('a full queue answers 503 with Retry-After in the API shape (streaming too, before the stream opens)', async () => {
    // (tinyA answers "Hello" at temperature 0 with ~1300 tokens: each of these runs 400 tokens)
    const body = { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 400, temperature: 0 };
    const running = [post('/v1/chat/completions', body), post('/v1/chat/completions', body), post('/v1/chat/completions', body)];
    await new Promise((r) => setTimeout(r, 50));
    const refused = await post('/v1/chat/completions', { ...body, stream: true });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('overloaded');
    const anth = await post('/v1/messages', { ...body, max_tokens: 4 });
    expect(anth.status).toBe(503);
    expect(((await anth.json()) as { error: { type: string } }).error.type).toBe('overloaded_error');
    for (const r of await Promise.all(running)) expect(r.status).toBe(200);
    expect(ctx.coordinator.stats.refused).toBeGreaterThanOrEqual(2);
  });

  it('--request-timeout cuts a long generation (finish "length") and refuses a request that waited too long', async () => {
    const { app: a2, ctx: c2 } = await buildApp({ engine, defaultMaxTokens: 8, requestTimeoutMs: 600 });
    try {
      // (tinyA answers "Hello" at temperature 0 with ~1300 tokens: far more than 600 ms of decoding)
      const long = { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 3000, temperature: 0 };
      const first = await a2.inject({ method: 'POST', url: '/v1/chat/completions', payload: long });
      const f = first.json() as { choices: { finish_reason: string }[]; usage: { completion_tokens: number } };
      expect(f.choices[0].finish_reason).toBe('length');
      expect(f.usage.completion_tokens).toBeLessThan(3000);
      // waiting: a request admitted with no limit holds the one slot (1000 tokens: ~1.5 s); one admitted with
      // a 300 ms limit behind it is refused when its time runs out in the queue. (Two requests
      // under the same limit race: the first one's limit ends first and frees the slot.)
      c2.coordinator.o.requestTimeoutMs = 0;
      const holder = a2.inject({ method: 'POST', url: '/v1/chat/completions', payload: { ...long, max_tokens: 1000 } });
      await new Promise((r) => setTimeout(r, 20));
      c2.coordinator.o.requestTimeoutMs = 300;
      const second = await a2.inject({ method: 'POST', url: '/v1/chat/completions', payload: long });
      expect(second.statusCode).toBe(408);
      expect(second.json().error.code).toBe('timeout');
      expect(second.json().error.message).toMatch(/waited longer than its time limit \(0\.3 s\)/);
      expect((await holder).statusCode).toBe(200);
    } finally {
      await a2.close();
    }
  });

  it('every request leaves one log line with method, path, status, tokens and time', async () => {
    requestLines.length = 0;
    await post('/v1/chat/completions', { messages: user, max_tokens: 2 });
    await fetch(`${base}/v1/nope`);
    await new Promise((r) => setTimeout(r, 50));
    expect(requestLines.some((l) => /^POST \/v1\/chat\/completions 200 prompt=\d+ cached=\d+ generated=\d+ finish=\w+ \d+ms$/.test(l))).toBe(true);
    expect(requestLines.some((l) => /^GET \/v1\/nope 404 \d+ms$/.test(l))).toBe(true);
  });
});
