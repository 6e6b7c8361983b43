#!/usr/bin/env node
/**
 * q36-server: OpenAI (/v1/chat/completions, /v1/responses, /v1/completions) and Anthropic
 * (/v1/messages) compatible server for coding agents, plus the WebSocket chat. One coordinator
 * owns the model; the live session is reused across requests.
 *
 * Start-up order is chosen so mistakes surface before the (slow) model load: flags, the trace
 * file, the port (bound first; requests get 503 "loading" until the model is ready), then the
 * model. Once serving, no request can take the process down (see the guards at the end).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import { metaNumber } from '../gguf/index.js';
import { openEngine } from '../engine/index.js';
import { DEFAULT_KV, MAX_BATCH_ROWS } from '../engine/defaults.js';
import { kvBytesPerToken, recurrentStateBytes } from '../engine/payload.js';
import { buildApp, DEFAULT_CACHE_RAM_MIB } from '../server/app.js';
import { CliError, openModelHeader } from './load-tokenizer.js';
import { ENGINE_PARSE_OPTIONS, draftSpec, engineOptions, num, parseCliArgs } from './options.js';
import { readEnv, modelEnv } from './env.js';
import { printVersionIfAsked } from './version.js';
import { wrapHelp } from './help.js';
import { defaultModel } from './model-store.js';
import { CACHE_SCOPES, type CacheScope } from '../server/scope.js';

const HELP = `usage: q36-server [-m MODEL] [--cpu|--vulkan] [--host 127.0.0.1] [--port 8000] [--ctx N (default: 65536 or what fits)] [-ctk T -ctv T]
                  [--cors] [--allow-origin ORIGIN]... [--api-key KEY] [--trace FILE] [--log-level info]
                  [--max-queue 64] [--request-timeout SECONDS] [--cache-ram MB (1024; 0 = off)] [--cache-scope shared|key] [--batched-session N (1)] [--vk-memory-limit SIZE]
                  [--tool-memory-max-ids 100000] [--disable-exact-tool-replay]
                  [--max-body-mb 32] [--max-tokens 4096] [--kv-disk-dir DIR --kv-disk-space-mb 8192]
                  [--kv-cache-min-tokens 512] [--kv-cache-cold-max-tokens 30000] [--kv-cache-continued-interval-tokens 10240]
                  [--kv-cache-boundary-trim-tokens 32] [--kv-cache-boundary-align-tokens 2048] [--draft ngram [--draft-max N (4)]]
Endpoints: GET /v1/models, GET /v1/models/qwen3.6-35b-a3b, POST /v1/chat/completions, POST /v1/messages,
           POST /v1/messages/count_tokens, POST /v1/responses, POST /v1/completions, GET /v1/chat/ws (WebSocket),
           HEAD|GET /, GET /health, GET /props, GET /metrics
--batched-session N: N live sessions (slots) served at once, each with its own KV cache and state;
             their decode steps run together (Vulkan: one batched step of up to 8 rows)
--ssd-streaming [--ssd-streaming-cache-experts N|SIZE] [--ssd-streaming-cold | --ssd-streaming-preload-experts N]
             [--ssd-streaming-full-layers N]: routed experts streamed from the model file through a bounded
             cache (as q36; F16 KV unless -ctk/-ctv; docs/ssd-streaming.md)
--cache-scope key: each API key (Authorization: Bearer KEY or x-api-key) reuses only its own cached
             prompts (live sessions, --cache-ram, the disk cache); shared (default): every client's
             requests reuse every other's, and cached_tokens shows how much of a prompt came before
--draft ngram: speculative decoding with drafts looked up in the context, verified several a step
             while one session generates; the tokens are the same as without, sampled ones too (the
             same seed; docs/speculative.md); --mtp FILE|auto [--mtp-draft N] [--mtp-margin F] drafts
             with the model's MTP head instead (with --draft ngram: after it)
--log-level: error (errors only), warn (+ skipped cache files, internal errors), info (+ one line per
             request, the default), debug (the same as info for now; --trace FILE records cache decisions)`;

/** The server's context when --ctx is not given (capped by the model and by memory). */
export const SERVER_DEFAULT_CTX = 65536;
const MIN_AUTO_CTX = 8192;

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
type Level = (typeof LOG_LEVELS)[number];

async function main(): Promise<number> {
  if (printVersionIfAsked('q36-server')) return 0;
  const a = parseCliArgs({
    ...ENGINE_PARSE_OPTIONS,
    model: { type: 'string', short: 'm', default: defaultModel(modelEnv()) }, host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string', default: '8000' },
    cors: { type: 'boolean' }, 'allow-origin': { type: 'string', multiple: true }, 'api-key': { type: 'string' }, trace: { type: 'string' },
    'log-level': { type: 'string', default: 'info' }, 'cache-ram': { type: 'string', default: String(DEFAULT_CACHE_RAM_MIB) }, 'cache-scope': { type: 'string', default: 'shared' }, 'max-queue': { type: 'string', default: '64' }, 'request-timeout': { type: 'string' },
    'tool-memory-max-ids': { type: 'string', default: '100000' }, 'disable-exact-tool-replay': { type: 'boolean' },
    'max-body-mb': { type: 'string', default: '32' }, 'max-tokens': { type: 'string', default: '4096' },
    'kv-disk-dir': { type: 'string' }, 'kv-disk-space-mb': { type: 'string', default: '8192' },
    'kv-cache-min-tokens': { type: 'string', default: '512' }, 'kv-cache-cold-max-tokens': { type: 'string', default: '30000' },
    'kv-cache-continued-interval-tokens': { type: 'string', default: '10240' }, 'kv-cache-boundary-trim-tokens': { type: 'string', default: '32' },
    'kv-cache-boundary-align-tokens': { type: 'string', default: '2048' }, 'batched-session': { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h' },
  });
  if (a.help) { console.log(wrapHelp(HELP)); return 0; }
  const port = num('--port', a.port, { min: 0, max: 65535, int: true })!;
  const level = a['log-level'] as Level;
  if (!LOG_LEVELS.includes(level)) throw new CliError(`--log-level must be one of ${LOG_LEVELS.join(', ')} (got "${level}")`);
  const at = (l: Level) => LOG_LEVELS.indexOf(l) <= LOG_LEVELS.indexOf(level);
  const say = (l: Level, m: string) => { if (at(l)) process.stderr.write(`${m}\n`); };
  if (a['api-key'] !== undefined && a['api-key'].trim() === '') throw new CliError('--api-key is empty: give a key, or leave the flag out to serve without authentication');
  for (const origin of a['allow-origin'] ?? []) {
    let ok = false;
    try { ok = new URL(origin).origin === origin; } catch { /* not a URL */ }
    if (!ok) throw new CliError(`--allow-origin "${origin}" is not an origin (scheme://host[:port], no path), e.g. http://192.168.1.5:3000`);
  }
  if (a.trace) {
    try { fs.closeSync(fs.openSync(a.trace, 'a')); } catch (e) { throw new CliError(`cannot write --trace "${a.trace}": ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`); }
  }
  const maxQueue = num('--max-queue', a['max-queue'], { min: 0, int: true })!;
  const slots = num('--batched-session', a['batched-session'], { min: 1, max: 64, int: true })!;
  const cacheRamMiB = num('--cache-ram', a['cache-ram'], { min: 0 })!;
  const cacheScope = a['cache-scope'] as CacheScope;
  if (!CACHE_SCOPES.includes(cacheScope)) throw new CliError(`--cache-scope must be ${CACHE_SCOPES.join(' or ')} (got "${a['cache-scope']}")`);
  const timeoutS = num('--request-timeout', a['request-timeout'], { min: 0 });
  const header = openModelHeader(a.model!);
  const modelCtx = metaNumber(header, 'qwen35moe.context_length', 262144);
  const draft = draftSpec(a, ['ngram'], { mtp: true });
  const eo = engineOptions(a.model!, a, modelCtx, draft);
  if (a.ctx === undefined) eo.ctx = Math.min(modelCtx, SERVER_DEFAULT_CTX);
  // the memory budget counts every slot's KV cache and state; a batched step holds up to 8 rows
  eo.sessions = slots;
  eo.batchRows = readEnv().vkSessionBatch === false ? 1 : Math.min(slots, MAX_BATCH_ROWS);
  const kvDisk = a['kv-disk-dir'] ? {
    dir: a['kv-disk-dir'], spaceMiB: num('--kv-disk-space-mb', a['kv-disk-space-mb'], { min: 1 })!,
    minTokens: num('--kv-cache-min-tokens', a['kv-cache-min-tokens'], { min: 1, int: true }),
    coldMaxTokens: num('--kv-cache-cold-max-tokens', a['kv-cache-cold-max-tokens'], { min: 1, int: true }),
    continuedIntervalTokens: num('--kv-cache-continued-interval-tokens', a['kv-cache-continued-interval-tokens'], { min: 1, int: true }),
    trimTokens: num('--kv-cache-boundary-trim-tokens', a['kv-cache-boundary-trim-tokens'], { min: 0, int: true }),
    alignTokens: num('--kv-cache-boundary-align-tokens', a['kv-cache-boundary-align-tokens'], { min: 1, int: true }),
  } : undefined;

  // the port first: "address in use" must not wait for a model load
  const server = http.createServer();
  const loading = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' });
    res.end(JSON.stringify({ error: { message: 'the model is still loading; retry shortly', type: 'overloaded_error', code: 'loading' } }));
  };
  server.on('request', loading);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new CliError(e.code === 'EADDRINUSE' ? `port ${port} on ${a.host} is already in use (another q36-server? pick one with --port)` : `cannot listen on ${a.host}:${port}: ${e.message}`)));
    server.listen(port, a.host, () => resolve());
  });
  const addr = server.address();
  const url = typeof addr === 'object' && addr ? `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}` : String(addr);
  say('info', `q36-server: bound ${url}; loading ${a.model} (${eo.backend}, ctx ${eo.ctx}, KV ${eo.kvTypes!.k}/${eo.kvTypes!.v})`);

  // agents open with 10-25K-token prompts: without --ctx, the server takes the largest context up
  // to SERVER_DEFAULT_CTX that the model allows and the memory holds (halving until it opens)
  let engine;
  for (;;) {
    try { engine = await openEngine(eo); break; } catch (e) {
      if (a.ctx !== undefined || eo.ctx <= MIN_AUTO_CTX) { server.close(); throw new CliError((e as Error).message); }
      say('warn', `q36-server: ctx ${eo.ctx} does not fit (${(e as Error).message}); trying ${eo.ctx >> 1}`);
      eo.ctx >>= 1;
    }
  }
  say('info', engine.describe());
  if (slots > 1) {
    const per = kvBytesPerToken(engine.shape, engine.options.kvTypes ?? DEFAULT_KV[engine.backend]) * engine.options.ctx + recurrentStateBytes(engine.shape);
    say('info', `sessions  ${slots} slots × ${(per / 2 ** 20).toFixed(1)} MiB (KV for ctx ${engine.options.ctx} + DeltaNet state) = ${(slots * per / 2 ** 20).toFixed(1)} MiB`);
  }
  server.removeListener('request', loading);
  const built = await buildApp({
    engine, server, cors: a.cors, allowOrigins: a['allow-origin'], hosts: { any: a.host === '0.0.0.0' || a.host === '::', names: [a.host] }, apiKey: a['api-key'], trace: a.trace, exactToolReplay: !a['disable-exact-tool-replay'],
    toolMemoryMaxIds: num('--tool-memory-max-ids', a['tool-memory-max-ids'], { min: 1, int: true }),
    bodyLimit: num('--max-body-mb', a['max-body-mb'], { min: 1 })! * 2 ** 20, defaultMaxTokens: num('--max-tokens', a['max-tokens'], { min: 1, int: true }),
    maxQueue, slots, draft, requestTimeoutMs: timeoutS ? timeoutS * 1000 : undefined, kvDisk, cacheRamMiB, cacheScope,
    log: (m) => say('warn', m),
    requestLog: at('info') ? (line) => say('info', line) : undefined,
  }).catch((e: Error) => { server.close(); engine.dispose(); throw new CliError(e.message); });
  const { app, ctx } = built;
  await app.ready();
  say('info', `q36-server: serving on ${url} (model qwen3.6-35b-a3b, ${engine.backend}, ctx ${engine.options.ctx}, queue ≤ ${maxQueue}${slots > 1 ? `, ${slots} sessions` : ''}${draft ? `, drafts: ${draft.kind} (up to ${Math.max(draft.max, draft.mtp?.max ?? 0)} a step)` : ''}${timeoutS ? `, request timeout ${timeoutS} s` : ''}${a['api-key'] ? ', API key required' : ''}${kvDisk ? `, disk KV cache ${kvDisk.dir}` : ''})`);

  // a bug reached by some request must not end the server for every other client
  process.on('uncaughtException', (e) => say('error', `q36-server: internal error (still serving): ${e.stack ?? e}`));
  process.on('unhandledRejection', (e) => say('error', `q36-server: internal error (still serving): ${(e as Error)?.stack ?? e}`));
  // clean exit: the live session goes to the disk cache (reason "shutdown") before the process ends
  let stopping = false;
  const stop = async () => {
    // a second signal while shutting down: leave now
    if (stopping) process.exit(130);
    stopping = true;
    say('info', 'q36-server: shutting down');
    // a save that hangs must not keep the process forever
    setTimeout(() => { say('error', 'q36-server: shutdown took over 30 s; exiting'); process.exit(1); }, 30_000).unref();
    // dropping the HTTP connections cancels their generations (a long prefill stops at its next chunk)
    server.closeAllConnections();
    await app.close();
    server.close();
    await ctx.coordinator.saveLive('shutdown');
    ctx.coordinator.dispose();
    engine.dispose();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return 0;
}

main().catch((e) => {
  console.error(`q36-server: ${(e as Error).message}`);
  // (a bound port would keep the process alive)
  process.exit(e instanceof CliError ? e.exitCode : 1);
});
