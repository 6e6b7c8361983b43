import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { FastifyInstance } from 'fastify';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import { renderChat } from '../ts/chat/render.js';
import type { ServerContext } from '../ts/server/context.js';
import { fixture, tmpDir } from './helpers.js';

let app: FastifyInstance, ctx: ServerContext, base = '';
const trace = path.join(tmpDir(), 'trace.jsonl');

beforeAll(async () => {
  const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  ({ app, ctx } = await buildApp({ engine, trace, defaultMaxTokens: 64, bodyLimit: 1 << 20 }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => { await app.close(); });

const weather = { type: 'function' as const, function: { name: 'get_weather', description: 'Get weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] } } };

describe('OpenAI-compatible API with the official client', () => {
  const client = () => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused' });

  it('lists the model', async () => {
    const list = await client().models.list();
    expect(list.data.map((m) => m.id)).toContain('qwen3.6-35b-a3b');
  });

  it('non-streaming chat returns the OpenAI shape with usage', async () => {
    const r = await client().chat.completions.create({ model: 'qwen3.6-35b-a3b', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 12, temperature: 0 });
    expect(r.object).toBe('chat.completion');
    expect(r.choices[0].message.role).toBe('assistant');
    expect(['stop', 'length', 'tool_calls']).toContain(r.choices[0].finish_reason);
    expect(r.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('streaming chat delivers chunks, a finish reason and usage; a longer prompt reuses the prefix', async () => {
    const msgs: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me about lighthouses.' }];
    const stream = await client().chat.completions.create({ model: 'x', messages: msgs, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let text = '', reasoning = '', finish: string | null = null, usage: OpenAI.CompletionUsage | undefined;
    for await (const c of stream) {
      if (c.usage) usage = c.usage;
      const ch = c.choices[0];
      if (!ch) continue;
      text += ch.delta.content ?? '';
      reasoning += (ch.delta as { reasoning_content?: string }).reasoning_content ?? '';
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    expect(finish).not.toBeNull();
    expect(usage!.completion_tokens).toBeGreaterThan(0);
    expect(text.length + reasoning.length).toBeGreaterThan(0);
    // the same conversation, one turn longer: the shared prefix is not prefilled again
    const r2 = await client().chat.completions.create({ model: 'x', messages: [...msgs, { role: 'assistant', content: text }, { role: 'user', content: 'And then?' }], max_tokens: 4, temperature: 0 });
    // history drops the think block, so the reusable prefix ends where the assistant turn starts
    // (before the "<think>\n" opener of the first prompt): a checkpoint sits exactly there
    expect(r2.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(usage!.prompt_tokens - 2);
  });

  it('tool-call round trip: a forced call is returned, its result sent back, the next turn continues with the prefix reused', async () => {
    // The random tiny model does not call tools by itself: the test writes the assistant's tool call
    // into the history the way a client replays it, with arguments re-serialised in another key order.
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Weather in Rome?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_x1', type: 'function', function: { name: 'get_weather', arguments: '{"days": 2, "city": "Rome"}' } }] },
      { role: 'tool', tool_call_id: 'call_x1', content: '{"t": 28}' },
    ];
    const r1 = await client().chat.completions.create({ model: 'x', messages: history, tools: [weather], max_tokens: 8, temperature: 0 });
    expect(r1.choices[0].message.role).toBe('assistant');
    const r2 = await client().chat.completions.create({ model: 'x', messages: [...history, { role: 'assistant', content: r1.choices[0].message.content ?? '' }, { role: 'user', content: 'Thanks' }], tools: [weather], max_tokens: 4, temperature: 0 });
    // a new user query makes the template drop the think block of the earlier tool-call turn, so the
    // reusable prefix ends where that turn starts; everything before it is reused, not prefilled
    const tok = ctx.coordinator.engine.tokenizer;
    const upToTurn = tok.encode(renderChat([{ role: 'user', content: 'Weather in Rome?' }], { tools: [weather], addGenerationPrompt: false }) + '<|im_start|>assistant\n').length;
    expect(r2.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(upToTurn);
    expect(r2.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0.8 * r1.usage!.prompt_tokens);
  });

  it('errors come back in the OpenAI shape; the server keeps serving', async () => {
    const bad = async (body: string, ct = 'application/json') => {
      const r = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': ct }, body });
      return { status: r.status, body: await r.json() as { error: { code: string; message: string } } };
    };
    let r = await bad('{"messages": [');
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_json');
    r = await bad(JSON.stringify({ messages: [{ role: 'wizard', content: 'x' }] }));
    expect(r.body.error.code).toBe('unknown_role');
    r = await bad(JSON.stringify({ messages: 'hi' }));
    expect(r.body.error.code).toBe('invalid_request');
    r = await bad(JSON.stringify({ messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }));
    expect(r.body.error.message).toMatch(/temperature must be a number/);
    r = await bad(JSON.stringify({ messages: [{ role: 'assistant', content: 'only me' }] }));
    expect(r.body.error.code).toBe('template_error');
    r = await bad(JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(2 << 20) }] }));
    expect(r.status).toBe(413);
    const ok = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'still alive?' }], max_tokens: 2 });
    expect(ok.choices).toHaveLength(1);
  });

  it('a client vanishing mid-stream cancels its generation', async () => {
    const ac = new AbortController();
    const before = ctx.coordinator.stats.requests;
    const stream = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Write a long story.' }], max_tokens: 3000, stream: true }, { signal: ac.signal });
    let n = 0;
    try { for await (const _ of stream) { if (++n === 3) ac.abort(); } } catch { /* aborted */ }
    // the coordinator is free again quickly (the 3000-token generation was cancelled)
    const t0 = Date.now();
    const r = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'next' }], max_tokens: 2 });
    expect(r.choices).toHaveLength(1);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(ctx.coordinator.stats.requests).toBe(before + 2);
  });
});

describe('Anthropic-compatible API with the official client', () => {
  const client = () => new Anthropic({ baseURL: base, apiKey: 'unused' });

  it('non-streaming message with thinking and usage', async () => {
    const r = await client().messages.create({ model: 'qwen3.6-35b-a3b', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] });
    expect(r.type).toBe('message');
    expect(r.role).toBe('assistant');
    expect(['end_turn', 'max_tokens', 'tool_use']).toContain(r.stop_reason);
    expect(r.usage.output_tokens).toBeGreaterThan(0);
  });

  it('streaming with thinking: events in order, thinking deltas before text', async () => {
    const stream = client().messages.stream({ model: 'x', max_tokens: 24, messages: [{ role: 'user', content: 'Think, then answer.' }], thinking: { type: 'enabled', budget_tokens: 1024 } });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types[types.length - 1]).toBe('message_stop');
    expect(types).toContain('message_delta');
    expect(final.content.length).toBeGreaterThan(0);
    expect(final.content[0].type).toBe('thinking');
  });

  it('tool_use round trip: the tool result goes back, the next turn reuses the cached prefix', async () => {
    const tools = [{ name: 'get_weather', description: 'Get weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"t": -3}' }] },
    ];
    const r1 = await client().messages.create({ model: 'x', max_tokens: 8, tools, messages, thinking: { type: 'disabled' } });
    const r2 = await client().messages.create({ model: 'x', max_tokens: 4, tools, thinking: { type: 'disabled' }, messages: [...messages, { role: 'assistant', content: r1.content.filter((b) => b.type === 'text').length ? r1.content.filter((b) => b.type === 'text') as Anthropic.TextBlockParam[] : 'ok' }, { role: 'user', content: 'Thanks' }] });
    expect(r2.usage.cache_read_input_tokens).toBeGreaterThan(0);
  });

  it('errors come back in the Anthropic shape', async () => {
    const r = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }) });
    expect(r.status).toBe(400);
    const b = await r.json() as { type: string; error: { type: string; message: string } };
    expect(b.type).toBe('error');
    expect(b.error.message).toMatch(/max_tokens is required/);
  });
});

describe('trace', () => {
  it('records requests, cache decisions and generated text', () => {
    const lines = fs.readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.some((l) => l.event === 'request')).toBe(true);
    expect(lines.some((l) => l.event === 'cache')).toBe(true);
    expect(lines.some((l) => l.event === 'generated')).toBe(true);
  });
});

describe('exact tool replay', () => {
  it('a call id the server issued renders the sampled bytes, whatever key order the client re-serialised', async () => {
    const { ToolMemory } = await import('../ts/server/tool-memory.js');
    const { fromOpenAI } = await import('../ts/server/convert.js');
    const mem = new ToolMemory(2);
    const raw = '\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>';
    const id = mem.newId();
    expect(id).toMatch(/^call_[A-Za-z0-9_-]{16}$/);
    mem.remember([id], { reasoning: 'Need the tool.', content: raw });
    const msgs = fromOpenAI([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: '{"days":2,"city":"Rome"}' } }] },
      { role: 'tool', tool_call_id: id, content: 'sunny' },
    ], mem);
    const prompt = renderChat(msgs, { tools: [weather] });
    expect(prompt).toContain('<think>\nNeed the tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome');
    // canonical fallback (unknown id): parameters in the schema's property order, not the client's
    const canon = renderChat(fromOpenAI([{ role: 'user', content: 'Weather?' }, { role: 'assistant', content: null, tool_calls: [{ id: 'other', type: 'function', function: { name: 'get_weather', arguments: '{"days":2,"city":"Rome"}' } }] }, { role: 'tool', content: 'sunny' }], mem, [weather]), { tools: [weather] });
    expect(canon).toContain('<parameter=city>\nRome\n</parameter>\n<parameter=days>\n2\n</parameter>');
    // bounded: the oldest ids are forgotten
    mem.remember(['a'], { reasoning: '', content: 'x' });
    mem.remember(['b'], { reasoning: '', content: 'y' });
    expect(mem.recall(id)).toBeUndefined();
    expect(mem.recall('b')).toBeDefined();
  });
});

describe('/v1/completions', () => {
  it('raw prompt completion, streaming and not', async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x' });
    const r = await client.completions.create({ model: 'x', prompt: 'Once upon a time', max_tokens: 5, temperature: 0 });
    expect(r.object).toBe('text_completion');
    expect(typeof r.choices[0].text).toBe('string');
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    const s = await client.completions.create({ model: 'x', prompt: 'Once upon a time', max_tokens: 5, temperature: 0, stream: true });
    let text = '', finish: string | null = null;
    for await (const c of s) { text += c.choices[0]?.text ?? ''; finish = c.choices[0]?.finish_reason ?? finish; }
    expect(text).toBe(r.choices[0].text); // greedy: the same text
    expect(finish).not.toBeNull();
  });
});

describe('WebSocket chat', () => {
  it('a conversation keeps its live state: the follow-up prefills only the new message', async () => {
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/chat/ws`);
    const inbox: Record<string, unknown>[] = [];
    const waiters: ((m: Record<string, unknown>) => void)[] = [];
    ws.on('message', (d) => { const m = JSON.parse(String(d)); inbox.push(m); waiters.splice(0).forEach((w) => w(m)); });
    const next = (type: string) => new Promise<Record<string, unknown>>((resolve) => {
      const look = () => { const i = inbox.findIndex((m) => m.type === type || m.type === 'error'); if (i >= 0) resolve(inbox.splice(i, 1)[0]); else waiters.push(look); };
      look();
    });
    await new Promise((r) => ws.on('open', r));
    ws.send(JSON.stringify({ type: 'session.start', system: 'You are terse.', max_tokens: 8, temperature: 0 }));
    expect((await next('session.ready')).type).toBe('session.ready');
    ws.send(JSON.stringify({ type: 'message', content: 'Hello there' }));
    const d1 = await next('done') as { usage: { prompt_tokens: number; completion_tokens: number } };
    expect(inbox.some((m) => m.type === 'token' || m.type === 'reasoning') || d1.usage.completion_tokens > 0).toBe(true);
    ws.send(JSON.stringify({ type: 'message', content: 'And a follow-up' }));
    const d2 = await next('done') as { usage: { prompt_tokens: number; cached_tokens: number } };
    // everything the first turn left in the live session is reused (its prompt and its answer)
    expect(d2.usage.cached_tokens).toBeGreaterThanOrEqual(d1.usage.prompt_tokens + d1.usage.completion_tokens - 1);
    ws.send(JSON.stringify({ type: 'nonsense' }));
    expect(String((await next('error')).message)).toMatch(/unknown message type/);
    // greedy (this answer runs 771 tokens to its EOS), cancelled once its first piece arrives: a
    // fixed 100 ms wait raced the EOS on a loaded machine, where the timer fired late
    ws.send(JSON.stringify({ type: 'session.start', max_tokens: 2000, temperature: 0 }));
    await next('session.ready');
    inbox.length = 0;
    ws.send(JSON.stringify({ type: 'message', content: 'Write at length.' }));
    await new Promise<void>((r) => { const look = () => (inbox.some((m) => m.type === 'token' || m.type === 'reasoning') ? r() : waiters.push(look)); look(); });
    ws.send(JSON.stringify({ type: 'cancel' }));
    expect((await next('done')).finish_reason).toBe('cancelled');
    ws.close();
  });
});

describe('Responses API with the official client', () => {
  it('non-streaming and streaming: events in order through response.completed; function_call_output continues', async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x' });
    const r = await client.responses.create({ model: 'x', input: 'Hello', max_output_tokens: 8, temperature: 0 });
    expect(r.object).toBe('response');
    // 8 tokens of a random model's thinking: the budget ends it, and the response says so
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details?.reason).toBe('max_output_tokens');
    expect(r.usage!.output_tokens).toBeGreaterThan(0);
    const stream = await client.responses.create({ model: 'x', input: [{ role: 'user', content: 'Think and answer.' }], max_output_tokens: 16, stream: true });
    const types: string[] = [];
    let lastSeq = -1;
    for await (const e of stream) { types.push(e.type); expect(e.sequence_number).toBeGreaterThan(lastSeq); lastSeq = e.sequence_number; }
    expect(types[0]).toBe('response.created');
    expect(['response.completed', 'response.incomplete']).toContain(types[types.length - 1]);
    // every content part is announced before its deltas (the SDK's stream helper needs it)
    expect(types.indexOf('response.content_part.added')).toBeLessThan(Math.max(types.indexOf('response.reasoning_text.delta'), types.indexOf('response.output_text.delta')));
    expect(types.filter((t) => t === 'response.output_item.added').length).toBe(types.filter((t) => t === 'response.output_item.done').length);
    // a tool round trip written by the client: function_call + function_call_output items
    const r2 = await client.responses.create({ model: 'x', max_output_tokens: 4, tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }],
      input: [{ role: 'user', content: 'Weather?' }, { type: 'function_call', call_id: 'call_9', name: 'get_weather', arguments: '{"city":"Rome"}' }, { type: 'function_call_output', call_id: 'call_9', output: 'sunny' }] });
    expect(['completed', 'incomplete']).toContain(r2.status);
  });
});

describe('--cors and --api-key', () => {
  it('answers preflight with CORS headers and refuses a wrong key in each API\'s shape', async () => {
    const engine = ctx.coordinator.engine;
    const { app: a2 } = await buildApp({ engine, cors: true, apiKey: 'sekret' });
    const pre = await a2.inject({ method: 'OPTIONS', url: '/v1/chat/completions' });
    expect(pre.statusCode).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('*');
    const noKey = await a2.inject({ method: 'GET', url: '/v1/models' });
    expect(noKey.statusCode).toBe(401);
    expect(noKey.json().error.code).toBe('unauthorized');
    const anth = await a2.inject({ method: 'POST', url: '/v1/messages', payload: {}, headers: { 'x-api-key': 'wrong' } });
    expect(anth.json().type).toBe('error');
    const ok = await a2.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer sekret' } });
    expect(ok.statusCode).toBe(200);
    const nf = await a2.inject({ method: 'GET', url: '/v1/models/gpt-4', headers: { authorization: 'Bearer sekret' } });
    expect(nf.statusCode).toBe(404);
    // a body that is JSON but not an object is refused by every generation endpoint
    for (const url of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/messages']) {
      const arr = await a2.inject({ method: 'POST', url, payload: '[1, 2]', headers: { authorization: 'Bearer sekret', 'x-api-key': 'sekret', 'content-type': 'application/json' } });
      expect(arr.statusCode, url).toBe(400);
      expect(arr.body, url).toMatch(/the body must be a JSON object/);
    }
    await a2.close();
  });
});
