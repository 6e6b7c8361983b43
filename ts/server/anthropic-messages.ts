/**
 * POST /v1/messages (Anthropic Messages) and /v1/messages/count_tokens: request parsing and event
 * shaping (thinking, text and tool_use blocks); the turn itself is turn.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { answerGrammar } from './structured.js';
import { ApiError, anthropicError, jsonBody } from './errors.js';
import { fromAnthropic, toolsFromAnthropic } from './convert.js';
import { maxTokens, sampling, stops, thinkingBudget, thinkingOn, toolChoice, unsupported } from './sampling.js';
import { countTokensBody, messagesBody } from './schemas.js';
import type { Sse } from './sse.js';
import { recallToolIds, toolIdsIn, type ServerContext } from './context.js';
import { prepareTurn, serveTurn, type ApiWriter, type TurnOutcome, type TurnSpec } from './turn.js';

type Obj = Record<string, unknown>;
const STOP: Record<string, string> = { stop: 'end_turn', stop_sequence: 'stop_sequence', length: 'max_tokens', tool_calls: 'tool_use', abort: 'end_turn', timeout: 'max_tokens' };

/** The request as a turn (shared by /v1/messages and count_tokens). */
function specOf(ctx: ServerContext, b: Obj): TurnSpec {
  unsupported(b, 'anthropic');
  const { tools, force } = toolChoice(b.tool_choice, 'anthropic', toolsFromAnthropic(b.tools));
  recallToolIds(ctx, toolIdsIn(b.messages));
  const msgs = b.messages as Obj[];
  // a final assistant message is a prefill: the answer continues it
  const continueAssistant = msgs[msgs.length - 1]?.role === 'assistant';
  if (continueAssistant && force) throw new ApiError('invalid_request', 'tool_choice cannot force a tool call while prefilling the assistant message', 'tool_choice');
  return {
    provider: 'anthropic', messages: fromAnthropic(b.system, b.messages, ctx.tools, tools), tools, think: thinkingOn(b), toolIdPrefix: 'toolu_',
    thinkingBudget: thinkingBudget(b), forceToolCall: force, continueAssistant,
    grammar: answerGrammar({ format: undefined, formatParam: 'tools', tools, force }),
    maxTokens: maxTokens(b, ['max_tokens'], ctx.defaultMaxTokens), sampling: sampling(b, ctx.sampling), stop: stops(b.stop_sequences, 'stop_sequences'),
  };
}

export function registerAnthropicMessages(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/messages/count_tokens', { schema: { body: countTokensBody } }, async (req: FastifyRequest) => {
    const b = jsonBody(req.body);
    // counting never generates: the limit is the context, as for a request
    const t = prepareTurn(ctx, { ...specOf(ctx, b), maxTokens: 1 }, { admit: false });
    return { input_tokens: t.tokens.length };
  });

  app.post('/v1/messages', { schema: { body: messagesBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const b = jsonBody(req.body);
    const spec = specOf(ctx, b);
    const id = `msg_${ctx.tools.newId('')}`;
    const model = typeof b.model === 'string' ? b.model : ctx.modelName;
    const usage = (r: TurnOutcome) => ({ input_tokens: r.promptTokens - r.cachedTokens, output_tokens: r.completionTokens, cache_read_input_tokens: r.cachedTokens, cache_creation_input_tokens: 0 });

    const body = (r: TurnOutcome) => {
      const content: Obj[] = [];
      if (r.parsed.reasoning) content.push({ type: 'thinking', thinking: r.parsed.reasoning, signature: '' });
      if (r.parsed.content) content.push({ type: 'text', text: r.parsed.content });
      r.parsed.toolCalls.forEach((c, i) => content.push({ type: 'tool_use', id: r.callIds[i], name: c.name, input: c.arguments }));
      return { id, type: 'message', role: 'assistant', model, content, stop_reason: STOP[r.finish], stop_sequence: r.stopSequence ?? null, usage: usage(r) };
    };

    const writer = (sse: Sse): ApiWriter => {
      let index = -1;
      let open: 'thinking' | 'text' | null = null;
      const close = () => {
        if (!open) return;
        if (open === 'thinking') sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: '' } });
        sse.event('content_block_stop', { type: 'content_block_stop', index });
        open = null;
      };
      const start = (kind: 'thinking' | 'text') => {
        if (open === kind) return;
        close();
        index++;
        open = kind;
        sse.event('content_block_start', { type: 'content_block_start', index, content_block: kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' } });
      };
      return {
        // the prompt is counted before the stream opens: message_start carries the real input tokens
        // Anthropic's own keep-alive event
        keepAlive: () => sse.event('ping', { type: 'ping' }),
        open: (t) => sse.event('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: t.promptTokens, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } } }),
        delta: (ev, t) => {
          if (ev.type === 'reasoning') { start('thinking'); sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: ev.text } }); }
          else if (ev.type === 'content') { start('text'); sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: ev.text } }); }
          else if (ev.type === 'tool_call_end') {
            close();
            index++;
            sse.event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: t.callId(ev.index), name: ev.call.name, input: {} } });
            sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(ev.call.arguments) } });
            sse.event('content_block_stop', { type: 'content_block_stop', index });
          }
        },
        finish: (r) => {
          close();
          sse.event('message_delta', { type: 'message_delta', delta: { stop_reason: STOP[r.finish], stop_sequence: r.stopSequence ?? null }, usage: usage(r) });
          sse.event('message_stop', { type: 'message_stop' });
        },
        error: (e: ApiError) => sse.event('error', anthropicError(e)),
      };
    };

    return serveTurn(ctx, req, reply, spec, { stream: b.stream === true, body, writer });
  });
}
