/**
 * WebSocket chat (GET /v1/chat/ws): a connection is a conversation (chat/conversation.ts), whose
 * prompts extend exactly what the live session already holds, so a follow-up message prefills only
 * the new suffix. Protocol: docs/websocket.md.
 *
 * Every frame is validated before it changes anything: a bad frame gets an `error` frame and the
 * conversation is left as it was. The upgrade's Origin is checked by the app's onRequest hook
 * (app.ts), like every other request.
 */
import type { FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import type { WebSocket } from 'ws';
import { Conversation } from '../chat/conversation.js';
import { ApiError, isObj } from './errors.js';
import { toolsFromOpenAI } from './convert.js';
import type { ServerContext } from './context.js';
import { executeTurn, prepareTurn } from './turn.js';
import { KEEP_ALIVE_MS } from './sse.js';
import { MAX_JSON_DEPTH, parseJsonBody } from './validate.js';
import { requestScope } from './scope.js';
import type { FastifyRequest } from 'fastify';

type Obj = Record<string, unknown>;

/** Close codes (RFC 6455 §7.4.1). */
export const WS_CLOSE = { goingAway: 1001, policy: 1008, tooBig: 1009 } as const;
/** Largest frame accepted; larger ones close the socket with 1009 (done by ws). */
export const WS_MAX_FRAME = 8 << 20;

/**
 * The frame policy both WebSocket protocols share: text frames of JSON (nesting bounded like
 * HTTP bodies) go to onFrame; a binary frame is an error and closes the socket (1008); any error
 * goes to onError and the socket stays open; a close ends what the connection started. A ping
 * frame every keepAliveMs (the protocol's own keep-alive, answered by every client's WebSocket
 * stack) keeps idle-timeout proxies and clients from dropping the connection while a long prompt
 * is prefilled before the first frame of an answer.
 */
export function onJsonFrames(socket: WebSocket, o: { onFrame(value: unknown): void; onError(e: unknown): void; onClose(): void; keepAliveMs?: number }): void {
  const ping = setInterval(() => { if (socket.readyState === socket.OPEN) socket.ping(); }, o.keepAliveMs ?? KEEP_ALIVE_MS);
  ping.unref();
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    try {
      if (isBinary) {
        o.onError(new ApiError('invalid_request', 'binary frames are not part of this protocol: send JSON text frames'));
        socket.close(WS_CLOSE.policy, 'text frames only');
        return;
      }
      o.onFrame(parseJsonBody(data.toString('utf8'), MAX_JSON_DEPTH));
    } catch (e) {
      o.onError(e);
    }
  });
  socket.on('error', () => { /* a broken connection is its own close */ });
  socket.on('close', () => { clearInterval(ping); o.onClose(); });
}

/** The fields of a client frame, checked; an ApiError names the first bad one. */
/** Messages a session.start may restore (the chat page's conversation after a reload). */
const MAX_HISTORY = 10_000;

function checkFrame(m: unknown): Obj & { type: string } {
  if (!isObj(m)) throw new ApiError('invalid_request', 'a frame must be a JSON object with a "type"');
  if (typeof m.type !== 'string') throw new ApiError('invalid_request', 'a frame needs a string "type"');
  const opt = (k: string, ok: (v: unknown) => boolean, what: string) => {
    if (m[k] !== undefined && !ok(m[k])) throw new ApiError('invalid_request', `"${m.type}": ${k} must be ${what}`, k);
  };
  opt('system', (v) => typeof v === 'string', 'a string');
  opt('thinking', (v) => typeof v === 'boolean', 'true or false');
  opt('max_tokens', (v) => Number.isInteger(v) && (v as number) > 0, 'a positive integer');
  opt('temperature', (v) => typeof v === 'number' && v >= 0 && v <= 2, 'a number in [0, 2]');
  opt('continue', (v) => typeof v === 'boolean', 'true or false');
  opt('history', (v) => Array.isArray(v) && v.length <= MAX_HISTORY && v.every((x) => isObj(x) && (x.role === 'user' || x.role === 'assistant') && typeof x.content === 'string'),
    `an array of at most ${MAX_HISTORY} {role: "user" | "assistant", content: string} messages`);
  return m as Obj & { type: string };
}

export async function registerWsChat(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  await app.register(websocket, {
    options: { maxPayload: WS_MAX_FRAME },
    // shutdown: every client is told the server is going away (1001) before the listener closes
    // (clients that do not answer the closing handshake within a second are cut off)
    preClose(done) {
      const wss = (this as unknown as { websocketServer: { clients: Set<WebSocket>; close(cb: () => void): void } }).websocketServer;
      for (const s of wss.clients) s.close(WS_CLOSE.goingAway, 'server shutting down');
      const force = setTimeout(() => { for (const s of wss.clients) s.terminate(); }, 1000);
      wss.close(() => { clearTimeout(force); done(); });
    },
  });
  app.get('/v1/chat/ws', { websocket: true }, (socket: WebSocket, req: FastifyRequest) => {
    const conv = new Conversation();
    const scope = requestScope(ctx.cacheScope, req.headers);
    let tools: Obj[] | undefined;
    let thinking = true;
    let maxTokens = ctx.defaultMaxTokens;
    let temperature: number | undefined;
    let busy: AbortController | null = null;
    const send = (m: Obj) => { if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(m)); };
    const fail = (e: unknown) => {
      const err = e instanceof ApiError ? e : new ApiError('internal', (e as Error).message);
      send({ type: 'error', code: err.code, message: err.message });
    };

    /** Generates the next assistant turn; `keep` messages stay if it fails before answering. */
    const generate = async (keep: number) => {
      busy = new AbortController();
      try {
        const prompt = conv.render({ think: thinking, tools });
        const turn = prepareTurn(ctx, {
          provider: 'openai', prompt, parse: true, tools, think: thinking, maxTokens,
          sampling: { ...ctx.sampling, ...(temperature !== undefined ? { temperature } : {}) },
        });
        const r = await executeTurn(ctx, turn, {
          signal: busy.signal, scope,
          onEvent: (ev, t) => {
            if (ev.type === 'reasoning') send({ type: 'reasoning', text: ev.text });
            else if (ev.type === 'content') send({ type: 'token', text: ev.text });
            else if (ev.type === 'tool_call_end') send({ type: 'tool_call', id: t.callId(ev.index), name: ev.call.name, arguments: ev.call.arguments });
          },
        });
        // the assistant turn exactly as sampled
        if (r.completionTokens > 0 || r.finish !== 'abort') conv.addAnswer({ prompt, raw: r.rawText, think: thinking, reasoning: r.parsed.reasoning });
        else conv.truncate(keep); // cancelled before any token: as if never sent
        send({ type: 'done', finish_reason: r.finish === 'abort' ? 'cancelled' : r.finish, usage: { prompt_tokens: r.promptTokens, cached_tokens: r.cachedTokens, completion_tokens: r.completionTokens } });
      } catch (e) {
        conv.truncate(keep);
        fail(e);
      } finally {
        busy = null;
      }
    };

    const handle = (m: Obj & { type: string }) => {
      const idle = () => { if (busy) throw new ApiError('invalid_request', 'a generation is already running: wait for "done" or send {"type":"cancel"} first'); };
      switch (m.type) {
        case 'session.start': {
          idle();
          if (m.system !== undefined && conv.length > 0) throw new ApiError('invalid_request', '"session.start": system can only be set before the first message', 'system');
          if (m.history !== undefined && conv.length > 0) throw new ApiError('invalid_request', '"session.start": history can only be given before the first message', 'history');
          const t = m.tools === undefined ? tools : toolsFromOpenAI(m.tools);
          if (m.system !== undefined) conv.setSystem(m.system as string);
          // an earlier conversation restored (rendered by the template: its first turn prefills it)
          for (const h of (m.history as { role: 'user' | 'assistant'; content: string }[] | undefined) ?? []) conv.add({ role: h.role, content: h.content });
          tools = t;
          if (m.thinking !== undefined) thinking = m.thinking as boolean;
          if (m.max_tokens !== undefined) maxTokens = m.max_tokens as number;
          if (m.temperature !== undefined) temperature = m.temperature as number;
          send({ type: 'session.ready', model: ctx.modelName });
          return;
        }
        case 'message': {
          if (typeof m.content !== 'string' || !m.content) throw new ApiError('invalid_request', '"message" needs a non-empty "content" string', 'content');
          idle();
          const keep = conv.length;
          conv.addUser(m.content);
          void generate(keep);
          return;
        }
        case 'tool_result': {
          if (typeof m.content !== 'string') throw new ApiError('invalid_request', '"tool_result" needs a "content" string', 'content');
          idle();
          const keep = conv.length;
          conv.addToolResult(m.content);
          if (m.continue === true) void generate(keep);
          return;
        }
        case 'continue':
          idle();
          void generate(conv.length);
          return;
        case 'cancel':
          busy?.abort();
          return;
        default:
          throw new ApiError('invalid_request', `unknown message type ${JSON.stringify(m.type)}`);
      }
    };

    onJsonFrames(socket, { onFrame: (m) => handle(checkFrame(m)), onError: fail, onClose: () => busy?.abort(), keepAliveMs: ctx.keepAliveMs });
  });
}
