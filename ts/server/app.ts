/**
 * The fastify application: routes, body limit, CORS, API key, and errors in each API's own shape.
 * Building it needs an engine; tests use inject() against tinyA on the CPU.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Engine } from '../engine/types.js';
import { vocabIndex } from '../grammar/vocab.js';
import { registerAnthropicMessages } from './anthropic-messages.js';
import { Coordinator, DEFAULT_DISK_POLICY, type CoordinatorOptions, type DiskPolicy } from './coordinator.js';
import { DiskCache } from './kv-disk/disk-cache.js';
import { MODEL_ID, type ServerContext } from './context.js';
import { ApiError, anthropicError, openaiError } from './errors.js';
import { registerModels } from './models.js';
import { registerStatus } from './status.js';
import { registerOpenAIChat } from './openai-chat.js';
import { registerOpenAICompletions } from './openai-completions.js';
import { registerWsChat } from './ws-chat.js';
import { registerResponses } from './responses.js';
import { registerResponsesWs } from './responses-ws.js';
import { ToolMemory } from './tool-memory.js';
import { parseJsonBody } from './validate.js';
import { validationMessage } from './schemas.js';
import { hostAllowed, originAllowed, type HostPolicy, type OriginPolicy } from './origin.js';
import { modelIdentity } from '../model/fingerprint.js';
import { RamCache } from './ram-cache.js';
import { apiKeyOf, type CacheScope } from './scope.js';

/**
 * --cache-ram default: a few agent-sized conversations of the real model (by arithmetic: 25K
 * tokens × 8 320 B of q8_0/q4_0 KV + 30 DeltaNet layers' state ≈ 270 MB each).
 */
export const DEFAULT_CACHE_RAM_MIB = 1024;

export interface AppOptions {
  engine: Engine;
  cors?: boolean;
  /** origins allowed besides loopback pages (browsers send Origin; programs do not) */
  /** Host names answered besides loopback ones (q36-server's --host), or any (default: loopback only) */
  hosts?: HostPolicy;
  allowOrigins?: string[];
  apiKey?: string;
  /** prompt-cache scope (scope.ts): shared by all clients (default), or one per API key */
  cacheScope?: CacheScope;
  bodyLimit?: number;
  trace?: string;
  toolMemoryMaxIds?: number;
  exactToolReplay?: boolean;
  defaultMaxTokens?: number;
  /** disk KV cache: directory, budget and save policy */
  kvDisk?: { dir: string; spaceMiB: number } & Partial<Omit<DiskPolicy, 'cache'>>;
  log?: (msg: string) => void;
  /** requests allowed to wait behind the running one (default: unbounded) */
  maxQueue?: number;
  /** a request's time limit in ms, waiting included (default: none) */
  /** ms of stream silence before a keep-alive event (default 5000; tests shorten it) */
  keepAliveMs?: number;
  requestTimeoutMs?: number;
  /** live sessions served at once (--batched-session N; default 1) */
  slots?: number;
  /** speculative decoding (--draft ngram, --mtp; coordinator.ts) */
  draft?: CoordinatorOptions['draft'];
  /** in-memory prompt cache budget in MiB (default 1024; 0 = off) */
  cacheRamMiB?: number;
  /** one line per finished request (method, path, status, tokens, ms) */
  requestLog?: (line: string) => void;
  /** an already listening HTTP server to serve on (q36-server binds before loading the model) */
  server?: Server;
}

export async function buildApp(o: AppOptions): Promise<{ app: FastifyInstance; ctx: ServerContext }> {
  const app = Fastify({
    bodyLimit: o.bodyLimit ?? 32 << 20, logger: false,
    // q36-server binds its port before the model loads and hands that server over
    ...(o.server ? { serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => { o.server!.on('request', handler); return o.server!; } } : {}),
    // bodies are checked as sent: no type coercion, no defaults filled in, nothing removed
    ajv: { customOptions: { allowUnionTypes: true, coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false } },
  });
  // JSON with a nesting bound (see validate.ts), replacing fastify's parser
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try { done(null, parseJsonBody(body as string)); } catch (e) { done(e as Error, undefined); }
  });
  const tools = new ToolMemory(o.toolMemoryMaxIds ?? 100_000, o.exactToolReplay ?? true);
  // the vocabulary's trie for structured output, built now rather than inside the first such request
  vocabIndex(o.engine.tokenizer);
  const disk: DiskPolicy | undefined = o.kvDisk ? {
    ...DEFAULT_DISK_POLICY, ...o.kvDisk,
    cache: new DiskCache({ dir: o.kvDisk.dir, budgetBytes: o.kvDisk.spaceMiB * 2 ** 20, model: modelIdentity(o.engine.options.model), log: o.log }),
  } : undefined;
  const ctx: ServerContext = {
    coordinator: new Coordinator({ engine: o.engine, trace: o.trace, disk, tools, log: o.log, maxQueue: o.maxQueue, requestTimeoutMs: o.requestTimeoutMs, slots: o.slots, draft: o.draft,
      ram: (o.cacheRamMiB ?? DEFAULT_CACHE_RAM_MIB) > 0 ? new RamCache((o.cacheRamMiB ?? DEFAULT_CACHE_RAM_MIB) * 2 ** 20) : undefined }),
    tools,
    disk: disk?.cache,
    modelName: MODEL_ID,
    sampling: { temperature: 0.6, topP: 0.95, topK: 20, minP: 0 },
    defaultMaxTokens: o.defaultMaxTokens ?? 4096,
    keepAliveMs: o.keepAliveMs,
    cacheScope: o.cacheScope,
  };
  const anthropicRoute = (url: string) => url.startsWith('/v1/messages');
  app.setErrorHandler((error, req, reply) => {
    const err = error as Error & { code?: string; statusCode?: number };
    let e: ApiError;
    if (err instanceof ApiError) e = err;
    else if ((err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') e = new ApiError('body_too_large', `request body exceeds ${o.bodyLimit ?? 32 << 20} bytes`);
    else if (err.code === 'FST_ERR_VALIDATION') e = new ApiError('invalid_request', validationMessage((err as { validation?: Parameters<typeof validationMessage>[0] }).validation));
    else if ((err as { code?: string }).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') e = new ApiError('invalid_request', 'send the body as application/json');
    else if ((err as { statusCode?: number }).statusCode === 400) e = new ApiError('invalid_json', `malformed JSON body: ${err.message}`);
    else if ((err as { code?: string }).code === 'context_length_exceeded') e = new ApiError('context_length_exceeded', err.message);
    else if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) e = new ApiError('invalid_request', err.message);
    else {
      e = new ApiError('internal', err.message);
      o.log?.(`internal error on ${req.method} ${req.url}: ${err.stack ?? err.message}`);
    }
    if (e.code === 'overloaded') reply.header('retry-after', '1');
    reply.status(e.status).send(anthropicRoute(req.url) ? anthropicError(e) : openaiError(e));
  });
  app.setNotFoundHandler((req, reply) => {
    const e = new ApiError('not_found', `no route ${req.method} ${req.url}`);
    reply.status(404).send(anthropicRoute(req.url) ? anthropicError(e) : openaiError(e));
  });
  const origins: OriginPolicy = { any: Boolean(o.cors), allowed: o.allowOrigins ?? [] };
  const hosts: HostPolicy = o.hosts ?? { any: false, names: [] };
  // per request: the log line and the /metrics counters ('close' fires for hijacked, streamed
  // replies too, and when the client goes away)
  const requests = new Map<string, number>();
  app.addHook('onRequest', async (req, reply) => {
    const t0 = performance.now();
    reply.raw.once('close', () => {
      const route = req.routeOptions.url ?? 'unmatched';
      const key = `${req.method} ${route} ${reply.raw.statusCode}`;
      requests.set(key, (requests.get(key) ?? 0) + 1);
      if (!o.requestLog) return;
      const u = ctx.coordinator.usageOf(req.raw);
      const tokens = u ? ` prompt=${u.promptTokens} cached=${u.cachedTokens} generated=${u.completionTokens} finish=${u.finish}` : '';
      const status = reply.raw.writableFinished ? reply.raw.statusCode : `${reply.raw.statusCode}(client gone)`;
      o.requestLog(`${req.method} ${req.url.split('?')[0]} ${status}${tokens} ${(performance.now() - t0).toFixed(0)}ms`);
    });
  });
  app.addHook('onRequest', async (req, reply) => {
    // a refused WebSocket upgrade is answered over the raw socket, which nothing else closes
    if (req.headers.upgrade) reply.raw.once('finish', () => req.raw.socket?.destroy());
    if (!hostAllowed(req.headers.host, hosts)) throw new ApiError('forbidden', `host ${JSON.stringify(req.headers.host)} is not served (a DNS-rebinding guard: loopback names and --host are)`);
    if (!originAllowed(req.headers.origin, origins, req.headers.host)) throw new ApiError('forbidden', `origin ${JSON.stringify(req.headers.origin)} is not allowed (loopback pages are; add others with --allow-origin or --cors)`);
    // an origin named by --allow-origin gets the CORS answers too (its preflight used to find no route: 404)
    const named = req.headers.origin !== undefined && origins.allowed.includes(req.headers.origin);
    if (o.cors || named) {
      reply.header('access-control-allow-origin', o.cors ? '*' : req.headers.origin!);
      if (!o.cors) reply.header('vary', 'origin');
      reply.header('access-control-allow-methods', 'GET, POST, OPTIONS');
      reply.header('access-control-allow-headers', 'content-type, authorization, x-api-key, anthropic-version, anthropic-beta');
      if (req.method === 'OPTIONS') { reply.status(204).send(); return reply; }
    }
    if (o.apiKey) {
      const given = apiKeyOf(req.headers);
      if (given !== o.apiKey) throw new ApiError('unauthorized', 'invalid or missing API key');
    }
  });
  registerModels(app, ctx);
  registerStatus(app, ctx, { requests });
  registerOpenAIChat(app, ctx);
  registerAnthropicMessages(app, ctx);
  registerOpenAICompletions(app, ctx);
  const responses = registerResponses(app, ctx);
  await registerWsChat(app, ctx);
  registerResponsesWs(app, ctx, responses);
  return { app, ctx };
}
