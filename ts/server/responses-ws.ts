/**
 * Responses API WebSocket mode (GET /v1/responses with an Upgrade): one long-lived socket; each
 * turn is a `response.create` event — the POST /v1/responses body without `stream` — answered by
 * the usual Responses stream events on the socket (responses.ts shapes them for both
 * transports). A continuation sends only its new input items with `previous_response_id`: the
 * server keeps, per response, the conversation it ended with (chat/conversation.ts: the exact
 * text the live session holds), so the next prompt is that text plus the template's bytes for the
 * new items, and only those are prefilled (usage counts the rest as cached tokens). A fork (a
 * continuation of an older response) resumes from the checkpoint the coordinator keeps where
 * that response ended. `stream_id` lanes are echoed on every event; on this one-session server
 * all lanes are served first come, first served. An error is an `error` event and the socket
 * stays open. Protocol and example: docs/server.md.
 *
 * Auth, Origin policy and limits are the app's (onRequest hooks run for the upgrade too).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { Conversation } from '../chat/conversation.js';
import type { ServerContext } from './context.js';
import { ApiError, isObj } from './errors.js';
import { responsesTurn, type ResponseStore } from './responses.js';
import { responsesBody, schemaErrors, validationMessage } from './schemas.js';
import { executeTurn, prepareTurn, type ApiWriter } from './turn.js';
import { onJsonFrames } from './ws-chat.js';
import { requestScope } from './scope.js';

type Obj = Record<string, unknown>;

/** Conversations kept for continuations (the oldest go first; their ids then fall back to the message store). */
export const LIVE_CONVERSATIONS = 256;

/** The error event of the WebSocket mode: the error in the API's shape, its HTTP status, the lane. */
function errorEvent(e: ApiError, streamId?: string): Obj {
  return { type: 'error', status: e.status, error: { type: e.code === 'internal' ? 'server_error' : 'invalid_request_error', code: e.code, message: e.message, param: e.param ?? null }, ...(streamId !== undefined ? { stream_id: streamId } : {}) };
}


/** response.create events one Responses WebSocket may have queued or running at once. */
export const WS_MAX_QUEUED = 16;
export function registerResponsesWs(app: FastifyInstance, ctx: ServerContext, store: ResponseStore): void {
  // response id → the conversation after it, and the tokens (and their text) the session held
  const live = new Map<string, { conv: Conversation; held?: { tokens: number[]; text: string } }>();
  const keep = (id: string, c: { conv: Conversation; held?: { tokens: number[]; text: string } }) => {
    live.set(id, c);
    while (live.size > LIVE_CONVERSATIONS) live.delete(live.keys().next().value as string);
  };

  app.route({
    method: 'GET', url: '/v1/responses',
    // a plain GET: this path's GET is the WebSocket mode only
    handler: async (_req: FastifyRequest, reply: FastifyReply) => {
      reply.header('upgrade', 'websocket');
      reply.status(426).send({ error: { message: 'GET /v1/responses is the Responses WebSocket mode: connect with Upgrade: websocket (or POST /v1/responses)', type: 'invalid_request_error', param: null, code: 'upgrade_required' } });
    },
    wsHandler: (socket: WebSocket, req: FastifyRequest) => {
      const scope = requestScope(ctx.cacheScope, req.headers);
      const send = (m: Obj) => { if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(m)); };
      // one turn at a time, in arrival order, whatever the lane (one session serves them all)
      let chain: Promise<void> = Promise.resolve();
      const running = new Set<{ ac: AbortController; id?: string; streamId?: string }>();
      let closed = false;

      const create = async (ev: Obj, job: { ac: AbortController; id?: string; streamId?: string }) => {
        const streamId = job.streamId;
        const lane = streamId !== undefined ? { stream_id: streamId } : {};
        const sink = { event: (_t: string, data: Obj) => send({ ...data, ...lane }) };
        let w: ApiWriter | undefined;
        try {
          if (closed || job.ac.signal.aborted) return;
          const { type: _type, stream: _stream, stream_id: _sid, ...body } = ev;
          const turn = responsesTurn(ctx, body, store);
          job.id = turn.id;
          // a live continuation: the exact conversation the previous response left, plus the new
          // items; otherwise (a first turn, an id only the message store knows, re-sent assistant
          // items) the whole conversation, rendered (the coordinator still reuses its prefix)
          const prevId = typeof body.previous_response_id === 'string' ? body.previous_response_id : undefined;
          const base = prevId !== undefined ? live.get(prevId) : undefined;
          let conv: Conversation;
          let held: { tokens: number[]; text: string } | undefined;
          if (base && turn.added.every((m) => m.role !== 'assistant')) {
            conv = base.conv.clone();
            held = base.held;
            for (const m of turn.added) conv.add(m);
          } else {
            conv = new Conversation();
            for (const m of turn.messages) conv.add(m);
          }
          const prompt = conv.render({ think: turn.spec.think, tools: turn.spec.tools });
          // the previous response's own tokens, then the new text: the session's token history
          // matches them exactly, so a fork rewinds to that response's end-of-turn checkpoint
          const tokens = held ? ctx.coordinator.engine.tokenizer.encodeAfter(held, prompt) : undefined;
          const prepared = prepareTurn(ctx, { ...turn.spec, messages: undefined, prompt, parse: true }, { tokens });
          const writer = turn.writer(sink);
          writer.open({ promptTokens: prepared.tokens.length });
          w = writer;
          const r = await executeTurn(ctx, prepared, { signal: job.ac.signal, scope, checkpointEnd: true, onEvent: (e, st) => writer.delta(e, st), onLogprob: writer.logprob?.bind(writer) });
          if (r.finish === 'abort') throw new ApiError('cancelled', 'the response was cancelled (response.cancel)');
          writer.finish(r);
          conv.addAnswer({ prompt, raw: r.rawText, think: turn.spec.think, reasoning: r.parsed.reasoning });
          keep(turn.id, { conv, held: r.live });
        } catch (e) {
          const err = e instanceof ApiError ? e : new ApiError('internal', (e as Error).message);
          // a stream that opened ends failed; either way the client gets the error event
          w?.error(err);
          send(errorEvent(err, streamId));
        }
      };

      const handle = (m: unknown) => {
        if (!isObj(m) || typeof m.type !== 'string') throw new ApiError('invalid_request', 'an event must be a JSON object with a string "type"');
        const streamId = typeof m.stream_id === 'string' ? m.stream_id : undefined;
        if (m.stream_id !== undefined && streamId === undefined) throw Object.assign(new ApiError('invalid_request', 'stream_id must be a string', 'stream_id'), { streamId });
        if (m.type === 'response.create') {
          if (m.background === true) throw Object.assign(new ApiError('invalid_request', 'background is not supported over WebSocket', 'background'), { streamId });
          const { type: _t, stream: _s, stream_id: _i, ...body } = m;
          const bad = schemaErrors(responsesBody, body);
          if (bad?.length) throw Object.assign(new ApiError('invalid_request', validationMessage(bad)), { streamId });
          // a socket's own queue is bounded like the server's (--max-queue): each queued event
          // holds its body until its turn
          const max = Math.min(ctx.coordinator.o.maxQueue ?? WS_MAX_QUEUED, WS_MAX_QUEUED);  // waiting, besides the running one
          if (running.size > max) throw Object.assign(new ApiError('overloaded', `${running.size} responses are already queued on this socket (at most ${max}): wait for one to finish`), { streamId });
          const job = { ac: new AbortController(), streamId };
          running.add(job);
          chain = chain.then(() => create(m, job)).finally(() => running.delete(job));
          return;
        }
        if (m.type === 'response.cancel') {
          // the named response, or everything of the lane, or everything
          const id = typeof m.response_id === 'string' ? m.response_id : undefined;
          for (const j of running) if ((id === undefined || j.id === id) && (streamId === undefined || j.streamId === streamId)) j.ac.abort();
          return;
        }
        throw Object.assign(new ApiError('invalid_request', `unknown event type ${JSON.stringify(m.type)} (response.create, response.cancel)`, 'type'), { streamId });
      };

      onJsonFrames(socket, {
        onFrame: handle,
        keepAliveMs: ctx.keepAliveMs,
        onError: (e) => {
          const err = e instanceof ApiError ? e : new ApiError('internal', (e as Error).message);
          send(errorEvent(err, (e as { streamId?: string }).streamId));
        },
        // the client went away: its turns are cancelled (the running one stops at its next token)
        onClose: () => { closed = true; for (const j of running) j.ac.abort(); },
      });
    },
  });
}
