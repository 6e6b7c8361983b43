/**
 * The Responses API WebSocket mode (GET /v1/responses upgraded): first turn and continuations by
 * previous_response_id that prefill only their new items (usage and the trace's real evaluation
 * count), a fork from an older response that resumes at its checkpoint, errors as `error` events
 * with the socket still usable, stream_id lanes, a disconnect cancelling the turn, and the
 * official SDK's WebSocket client. tinyA on the CPU.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { WebSocket } from 'ws';
import OpenAI from 'openai';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import type { ServerContext } from '../ts/server/context.js';
import { fixture, tmpDir } from './helpers.js';

type Ev = Record<string, any>;
let app: FastifyInstance, ctx: ServerContext, base: string;
const trace = process.env.KEEP_TRACE ?? path.join(tmpDir(), 'trace.jsonl');
const traced = (event: string) => fs.readFileSync(trace, 'utf8').trim().split('\n').map((x) => JSON.parse(x)).filter((x) => x.event === event);

beforeAll(async () => {
  const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  ({ app, ctx } = await buildApp({ engine, trace, defaultMaxTokens: 8 }));
  base = (await app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
});
afterAll(async () => { await app.close(); });

/** A socket with an inbox: next() waits for the first event matching, in arrival order. */
async function connect() {
  const ws = new WebSocket(`${base}/v1/responses`);
  const inbox: Ev[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (d) => { inbox.push(JSON.parse(String(d))); waiters.splice(0).forEach((w) => w()); });
  await new Promise((r, j) => { ws.once('open', r); ws.once('error', j); });
  const next = (ok: (e: Ev) => boolean) => new Promise<Ev>((resolve) => {
    const look = () => { const i = inbox.findIndex(ok); if (i >= 0) resolve(inbox.splice(i, 1)[0]); else waiters.push(look); };
    look();
  });
  const terminal = (e: Ev) => ['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(e.type);
  /** sends a response.create and collects its events up to the terminal one */
  const turn = async (body: Ev): Promise<{ events: Ev[]; last: Ev }> => {
    ws.send(JSON.stringify({ type: 'response.create', model: 'x', temperature: 0, max_output_tokens: 8, ...body }));
    const events: Ev[] = [];
    for (;;) {
      const e = await next((x) => (body.stream_id === undefined || x.stream_id === body.stream_id));
      events.push(e);
      if (terminal(e)) return { events, last: e };
    }
  };
  return { ws, next, turn, inbox };
}

describe('Responses WebSocket mode', () => {
  it('continuations prefill only their new items; a fork resumes at its response\'s checkpoint', async () => {
    const c = await connect();
    const tok = ctx.coordinator.engine.tokenizer;
    const first = await c.turn({ input: 'Hello', instructions: 'You are terse.' });
    expect(first.events[0].type).toBe('response.created');
    expect(['response.completed', 'response.incomplete']).toContain(first.last.type);
    const seqs = first.events.map((e) => e.sequence_number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    let prev = first.last.response;
    let prevEvents = first.events;
    const ids = [prev.id];
    // a length-cut answer's last sampled token never entered the session: the next prompt holds
    // its text, re-encoded (a random model's pieces take a few tokens)
    const lastPiece = (events: Ev[]) => tok.encode([...events].reverse().find((e) => /_text\.delta$/.test(e.type))?.delta ?? '').length;
    for (let k = 1; k <= 3; k++) {
      const before = traced('prefill').length;
      const r = await c.turn({ previous_response_id: prev.id, input: [{ role: 'user', content: `And ${k}?` }] });
      const u = r.last.response.usage, pu = prev.usage;
      // everything the previous turn left in the session is reused: its prompt and its answer
      expect(u.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(pu.input_tokens + pu.output_tokens - 1);
      // what was prefilled is the new user turn and the template's bytes around it, no more
      const suffix = tok.encode(`<|im_end|>\n<|im_start|>user\nAnd ${k}?<|im_end|>\n<|im_start|>assistant\n<think>\n`).length;
      expect(u.input_tokens - u.input_tokens_details.cached_tokens).toBeLessThanOrEqual(suffix + lastPiece(prevEvents));
      // and the model really evaluated only that (the trace counts rewinds' re-evaluations too)
      const p = traced('prefill').slice(before);
      expect(p.length).toBe(1);
      expect(p[0].evaluated).toBe(u.input_tokens - u.input_tokens_details.cached_tokens);
      prev = r.last.response;
      prevEvents = r.events;
      ids.push(prev.id);
    }
    // the prompts only ever grew: each continuation's text starts with the previous one's
    const prompts = traced('request').slice(-4).map((x) => x.prompt as string);
    for (let i = 1; i < prompts.length; i++) expect(prompts[i].startsWith(prompts[i - 1])).toBe(true);
    // a fork from the first response: its conversation, resumed where that response ended
    const before = traced('prefill').length;
    const f = await c.turn({ previous_response_id: ids[0], input: [{ role: 'user', content: 'Something else' }] });
    const fu = f.last.response.usage, u1 = first.last.response.usage;
    expect(fu.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(u1.input_tokens + u1.output_tokens - 1);
    const fp = traced('prefill').slice(before)[0];
    const fsuffix = tok.encode('<|im_end|>\n<|im_start|>user\nSomething else<|im_end|>\n<|im_start|>assistant\n<think>\n').length;
    expect(fp.evaluated).toBeLessThanOrEqual(fsuffix + lastPiece(first.events));
    expect(traced('request').slice(-1)[0].prompt.startsWith(prompts[0])).toBe(true);
    expect(traced('request').slice(-1)[0].prompt.startsWith(prompts[1])).toBe(false);
    c.ws.close();
  });

  it('errors are events and the socket stays usable: unknown id, malformed events, bad fields', async () => {
    const c = await connect();
    const r = await c.turn({ previous_response_id: 'resp_nope', input: 'hi' });
    expect(r.last).toMatchObject({ type: 'error', status: 400, error: { code: 'previous_response_not_found', param: 'previous_response_id' } });
    c.ws.send('{not json');
    expect((await c.next((e) => e.type === 'error')).error.code).toBe('invalid_json');
    c.ws.send(JSON.stringify({ kind: 'response.create' }));
    expect((await c.next((e) => e.type === 'error')).error.message).toMatch(/string "type"/);
    c.ws.send(JSON.stringify({ type: 'session.update' }));
    expect((await c.next((e) => e.type === 'error')).error.message).toMatch(/unknown event type "session.update"/);
    const bad = await c.turn({ input: 'hi', max_output_tokens: 0 });
    expect(bad.last.error.message).toMatch(/max_output_tokens must be >= 1/);
    const bg = await c.turn({ input: 'hi', background: true });
    expect(bg.last.error.message).toMatch(/background is not supported/);
    // still serving
    const ok = await c.turn({ input: 'Hello' });
    expect(['response.completed', 'response.incomplete']).toContain(ok.last.type);
    c.ws.close();
  });

  it('two stream_id lanes interleaved: events carry their lane, each continues its own conversation', async () => {
    const c = await connect();
    c.ws.send(JSON.stringify({ type: 'response.create', stream_id: 'a', model: 'x', temperature: 0, max_output_tokens: 6, input: 'Tell me about apples.' }));
    c.ws.send(JSON.stringify({ type: 'response.create', stream_id: 'b', model: 'x', temperature: 0, max_output_tokens: 6, input: 'Tell me about boats.' }));
    const done = (lane: string) => c.next((e) => e.stream_id === lane && ['response.completed', 'response.incomplete', 'error'].includes(e.type));
    const [a1, b1] = await Promise.all([done('a'), done('b')]);
    expect(a1.response.id).not.toBe(b1.response.id);
    const a2 = c.turn({ stream_id: 'a', previous_response_id: a1.response.id, input: [{ role: 'user', content: 'More.' }] });
    const b2 = c.turn({ stream_id: 'b', previous_response_id: b1.response.id, input: [{ role: 'user', content: 'More.' }] });
    const [ra, rb] = await Promise.all([a2, b2]);
    for (const r of [ra, rb]) expect(r.events.every((e) => e.stream_id === r.events[0].stream_id)).toBe(true);
    const prompts = traced('request').slice(-2).map((x) => x.prompt as string);
    expect(prompts.filter((p) => p.includes('apples')).length).toBe(1);
    expect(prompts.filter((p) => p.includes('boats')).length).toBe(1);
    c.ws.close();
  });

  it('a client that disconnects mid-stream cancels its turn; the server keeps serving', async () => {
    const c = await connect();
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'x', temperature: 0, max_output_tokens: 2000, input: 'Hello' }));
    await c.next((e) => e.type === 'response.output_text.delta' || e.type === 'response.reasoning_text.delta');
    const generatedBefore = ctx.coordinator.stats.generated;
    c.ws.terminate();
    // the next request is served, and the cancelled turn stopped well short of its 2000 tokens
    const d = await connect();
    const r = await d.turn({ input: 'Hi' });
    expect(['response.completed', 'response.incomplete']).toContain(r.last.type);
    expect(ctx.coordinator.stats.generated - generatedBefore).toBeLessThan(1000);
    // response.cancel stops a running response: failed, with the error event
    d.ws.send(JSON.stringify({ type: 'response.create', model: 'x', temperature: 0, max_output_tokens: 2000, input: 'Hello' }));
    await d.next((e) => e.type === 'response.output_text.delta' || e.type === 'response.reasoning_text.delta');
    d.ws.send(JSON.stringify({ type: 'response.cancel' }));
    expect((await d.next((e) => e.type === 'response.failed')).response.error.code).toBe('cancelled');
    expect((await d.next((e) => e.type === 'error')).error.code).toBe('cancelled');
    d.ws.close();
  });

  it('tool calls round-trip: the call as sampled, its output continues the live session', async () => {
    const c = await connect();
    const tools = [{ type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } }];
    const r = await c.turn({ input: 'What time is it?', tools, tool_choice: { type: 'function', name: 'get_time' }, reasoning: { effort: 'none' }, max_output_tokens: 40 });
    const call = r.last.response.output.find((o: Ev) => o.type === 'function_call');
    expect(call).toMatchObject({ name: 'get_time', call_id: expect.stringMatching(/^call_/) });
    expect(r.events.some((e) => e.type === 'response.function_call_arguments.done')).toBe(true);
    const promptBefore = traced('request').slice(-1)[0].prompt as string;
    const answer = traced('generated').slice(-1)[0].text as string;
    const next = await c.turn({ previous_response_id: r.last.response.id, tools, reasoning: { effort: 'none' }, input: [{ type: 'function_call_output', call_id: call.call_id, output: '12:00' }] });
    expect(['response.completed', 'response.incomplete']).toContain(next.last.type);
    const p = traced('request').slice(-1)[0].prompt as string;
    // the call exactly as sampled, then the tool result
    expect(p.startsWith(promptBefore + answer)).toBe(true);
    expect(p.slice((promptBefore + answer).length)).toContain('<tool_response>\n12:00\n</tool_response>');
    const u = next.last.response.usage, pu = r.last.response.usage;
    expect(u.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(pu.input_tokens + pu.output_tokens - 1);
    c.ws.close();
  });

  it('a plain GET is told to upgrade', async () => {
    const r = await fetch(`${base.replace('ws', 'http')}/v1/responses`);
    expect(r.status).toBe(426);
    expect((await r.json()).error.code).toBe('upgrade_required');
  });

  it('the official SDK WebSocket client: a first turn and a continuation', async () => {
    const { ResponsesWS } = await import('openai/resources/responses/ws');
    const client = new OpenAI({ baseURL: `${base.replace('ws', 'http')}/v1`, apiKey: 'x' });
    const rws = new ResponsesWS(client);
    const terminal: Ev[] = [];
    rws.send({ type: 'response.create', model: 'x', input: 'Hello', max_output_tokens: 4, temperature: 0 } as never);
    for await (const m of rws.stream()) {
      if (m.type !== 'message') continue;
      const e = (m as { message: Ev }).message;
      if (!['response.completed', 'response.incomplete', 'error'].includes(e.type)) continue;
      terminal.push(e);
      if (terminal.length === 2 || e.type === 'error') break;
      rws.send({ type: 'response.create', model: 'x', previous_response_id: e.response.id, input: [{ role: 'user', content: 'Again.' }], max_output_tokens: 4, temperature: 0 } as never);
    }
    expect(terminal.map((e) => e.type)).not.toContain('error');
    expect(terminal[1].response.previous_response_id).toBe(terminal[0].response.id);
    expect(terminal[1].response.usage.input_tokens_details.cached_tokens).toBeGreaterThan(0);
    rws.close();
  });
});
