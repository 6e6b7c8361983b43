/**
 * WebSocket chat (GET /v1/chat/ws): a connection is a conversation. The server keeps its messages
 * and renders them with Qwen3.6's preserve_thinking, so the rendered history is byte-identical to
 * what the live session already holds and a follow-up message prefills only the new suffix.
 * Protocol: docs/websocket.md.
 */
import type { FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import type { WebSocket } from 'ws';
import { renderChat } from '../chat/render.js';
import type { ChatMessage } from '../chat/types.js';
import type { ServerContext } from './context.js';
import { rememberTurn } from './openai-chat.js';

type Obj = Record<string, unknown>;

export async function registerWsChat(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  await app.register(websocket, { options: { maxPayload: 8 << 20 } });
  app.get('/v1/chat/ws', { websocket: true }, (socket: WebSocket) => {
    const messages: ChatMessage[] = [];
    let tools: Obj[] | undefined;
    let thinking = true;
    let maxTokens = ctx.defaultMaxTokens;
    let temperature: number | undefined;
    let busy: AbortController | null = null;
    const send = (o: Obj) => { if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(o)); };

    const generate = async () => {
      if (busy) { send({ type: 'error', message: 'a generation is already running: send {"type":"cancel"} first' }); return; }
      busy = new AbortController();
      try {
        const prompt = renderChat(messages, { tools, enableThinking: thinking ? undefined : false, preserveThinking: true });
        const ids: string[] = [];
        const r = await ctx.coordinator.run({
          prompt, startInReasoning: thinking, tools, maxTokens, signal: busy.signal,
          sampling: { ...ctx.sampling, ...(temperature !== undefined ? { temperature } : {}) },
          onEvent: (ev) => {
            if (ev.type === 'reasoning') send({ type: 'reasoning', text: ev.text });
            else if (ev.type === 'content') send({ type: 'token', text: ev.text });
            else if (ev.type === 'tool_call_end') { ids[ev.index] = ctx.tools.newId(); send({ type: 'tool_call', id: ids[ev.index], name: ev.call.name, arguments: ev.call.arguments }); }
          },
        });
        // the assistant turn exactly as sampled: reasoning and the raw text after </think>
        const i = r.rawText.indexOf('</think>');
        // (an answer cut off inside its reasoning has no content yet)
        const after = !thinking ? r.rawText : i >= 0 ? r.rawText.slice(i + '</think>'.length) : '';
        messages.push({ role: 'assistant', content: after, reasoning_content: r.parsed.reasoning });
        rememberTurn(ctx, r.rawText, r.parsed.reasoning, ids, thinking);
        send({ type: 'done', finish_reason: r.finish === 'abort' ? 'cancelled' : r.finish, usage: { prompt_tokens: r.promptTokens, cached_tokens: r.cachedTokens, completion_tokens: r.completionTokens } });
      } catch (e) {
        send({ type: 'error', message: (e as Error).message });
      } finally {
        busy = null;
      }
    };

    socket.on('message', (data: Buffer) => {
      let m: Obj;
      try { m = JSON.parse(data.toString('utf8')); } catch { send({ type: 'error', message: 'messages must be JSON objects' }); return; }
      switch (m.type) {
        case 'session.start':
          if (typeof m.system === 'string' && messages.length === 0) messages.push({ role: 'system', content: m.system });
          if (Array.isArray(m.tools)) tools = m.tools as Obj[];
          if (typeof m.thinking === 'boolean') thinking = m.thinking;
          if (typeof m.max_tokens === 'number' && m.max_tokens > 0) maxTokens = Math.floor(m.max_tokens);
          if (typeof m.temperature === 'number' && m.temperature >= 0) temperature = m.temperature;
          send({ type: 'session.ready', model: ctx.modelName });
          return;
        case 'message':
          if (typeof m.content !== 'string' || !m.content) { send({ type: 'error', message: '"message" needs a non-empty "content" string' }); return; }
          messages.push({ role: 'user', content: m.content });
          void generate();
          return;
        case 'tool_result':
          if (typeof m.content !== 'string') { send({ type: 'error', message: '"tool_result" needs a "content" string' }); return; }
          messages.push({ role: 'tool', content: m.content });
          if (m.continue === true) void generate();
          return;
        case 'continue':
          void generate();
          return;
        case 'cancel':
          busy?.abort();
          return;
        default:
          send({ type: 'error', message: `unknown message type ${JSON.stringify(m.type)}` });
      }
    });
    socket.on('close', () => busy?.abort());
  });
}
