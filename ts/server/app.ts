/**
 * The fastify application: routes, body limit, CORS, API key, and errors in each API's own shape.
 * Building it needs an engine; tests use inject() against tinyA on the CPU.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Engine } from '../engine/types.js';
import { registerAnthropicMessages } from './anthropic-messages.js';
import { Coordinator, DEFAULT_DISK_POLICY, type DiskPolicy } from './coordinator.js';
import { DiskCache } from './kv-disk/disk-cache.js';
import { MODEL_ID, type ServerContext } from './context.js';
import { ApiError, anthropicError, openaiError } from './errors.js';
import { registerModels } from './models.js';
import { registerOpenAIChat } from './openai-chat.js';
import { registerOpenAICompletions } from './openai-completions.js';
import { registerWsChat } from './ws-chat.js';
import { registerResponses } from './responses.js';
import { ToolMemory } from './tool-memory.js';

export interface AppOptions {
  engine: Engine;
  cors?: boolean;
  apiKey?: string;
  bodyLimit?: number;
  trace?: string;
  toolMemoryMaxIds?: number;
  exactToolReplay?: boolean;
  defaultMaxTokens?: number;
  /** disk KV cache: directory, budget and save policy */
  kvDisk?: { dir: string; spaceMiB: number } & Partial<Omit<DiskPolicy, 'cache'>>;
  log?: (msg: string) => void;
}

export async function buildApp(o: AppOptions): Promise<{ app: FastifyInstance; ctx: ServerContext }> {
  const app = Fastify({ bodyLimit: o.bodyLimit ?? 32 << 20, logger: false });
  const tools = new ToolMemory(o.toolMemoryMaxIds ?? 100_000, o.exactToolReplay ?? true);
  const disk: DiskPolicy | undefined = o.kvDisk ? {
    ...DEFAULT_DISK_POLICY, ...o.kvDisk,
    cache: new DiskCache({ dir: o.kvDisk.dir, budgetBytes: o.kvDisk.spaceMiB * 2 ** 20, log: o.log }),
  } : undefined;
  const ctx: ServerContext = {
    coordinator: new Coordinator(o.engine, o.trace, disk, tools),
    tools,
    disk: disk?.cache,
    modelName: MODEL_ID,
    sampling: { temperature: 0.6, topP: 0.95, topK: 20, minP: 0 },
    defaultMaxTokens: o.defaultMaxTokens ?? 4096,
  };
  const anthropicRoute = (url: string) => url.startsWith('/v1/messages');
  app.setErrorHandler((error, req, reply) => {
    const err = error as Error & { code?: string; statusCode?: number };
    let e: ApiError;
    if (err instanceof ApiError) e = err;
    else if ((err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') e = new ApiError('body_too_large', `request body exceeds ${o.bodyLimit ?? 32 << 20} bytes`);
    else if ((err as { code?: string }).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') e = new ApiError('invalid_request', 'send the body as application/json');
    else if ((err as { statusCode?: number }).statusCode === 400) e = new ApiError('invalid_json', `malformed JSON body: ${err.message}`);
    else if ((err as { code?: string }).code === 'context_length_exceeded') e = new ApiError('context_length_exceeded', err.message);
    else e = new ApiError('internal', err.message);
    reply.status(e.status).send(anthropicRoute(req.url) ? anthropicError(e) : openaiError(e));
  });
  app.setNotFoundHandler((req, reply) => {
    const e = new ApiError('not_found', `no route ${req.method} ${req.url}`);
    reply.status(404).send(anthropicRoute(req.url) ? anthropicError(e) : openaiError(e));
  });
  app.addHook('onRequest', async (req, reply) => {
    if (o.cors) {
      reply.header('access-control-allow-origin', '*');
      reply.header('access-control-allow-methods', 'GET, POST, OPTIONS');
      reply.header('access-control-allow-headers', 'content-type, authorization, x-api-key, anthropic-version, anthropic-beta');
      if (req.method === 'OPTIONS') { reply.status(204).send(); return reply; }
    }
    if (o.apiKey) {
      const given = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '') || String(req.headers['x-api-key'] ?? '');
      if (given !== o.apiKey) throw new ApiError('unauthorized', 'invalid or missing API key');
    }
  });
  registerModels(app, ctx);
  registerOpenAIChat(app, ctx);
  registerAnthropicMessages(app, ctx);
  registerOpenAICompletions(app, ctx);
  registerResponses(app, ctx);
  await registerWsChat(app, ctx);
  return { app, ctx };
}
