#!/usr/bin/env node
/**
 * q36-server: OpenAI (/v1/chat/completions) and Anthropic (/v1/messages) compatible server for
 * coding agents. One coordinator owns the model; the live session is reused across requests.
 */
import { metaNumber } from '../gguf/index.js';
import { openEngine } from '../engine/index.js';
import { DEFAULT_MODEL } from '../paths.js';
import { buildApp } from '../server/app.js';
import { CliError, openModelHeader } from './load-tokenizer.js';
import { ENGINE_PARSE_OPTIONS, engineOptions, num, parseCliArgs } from './options.js';

const HELP = `usage: q36-server [-m MODEL] [--cpu|--vulkan] [--host 127.0.0.1] [--port 8000] [--ctx N] [-ctk T -ctv T]
                  [--cors] [--api-key KEY] [--trace FILE] [--tool-memory-max-ids 100000] [--disable-exact-tool-replay]
                  [--max-body-mb 32] [--max-tokens 4096] [--kv-disk-dir DIR --kv-disk-space-mb 8192]
                  [--kv-cache-min-tokens 512] [--kv-cache-cold-max-tokens 30000] [--kv-cache-continued-interval-tokens 10240]
                  [--kv-cache-boundary-trim-tokens 32] [--kv-cache-boundary-align-tokens 2048]
Endpoints: GET /v1/models, GET /v1/models/qwen3.6-35b-a3b, POST /v1/chat/completions, POST /v1/messages`;

async function main(): Promise<number> {
  const a = parseCliArgs({
    ...ENGINE_PARSE_OPTIONS,
    model: { type: 'string', short: 'm', default: DEFAULT_MODEL }, host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string', default: '8000' },
    cors: { type: 'boolean' }, 'api-key': { type: 'string' }, trace: { type: 'string' },
    'tool-memory-max-ids': { type: 'string', default: '100000' }, 'disable-exact-tool-replay': { type: 'boolean' },
    'max-body-mb': { type: 'string', default: '32' }, 'max-tokens': { type: 'string', default: '4096' },
    'kv-disk-dir': { type: 'string' }, 'kv-disk-space-mb': { type: 'string', default: '8192' },
    'kv-cache-min-tokens': { type: 'string', default: '512' }, 'kv-cache-cold-max-tokens': { type: 'string', default: '30000' },
    'kv-cache-continued-interval-tokens': { type: 'string', default: '10240' }, 'kv-cache-boundary-trim-tokens': { type: 'string', default: '32' },
    'kv-cache-boundary-align-tokens': { type: 'string', default: '2048' },
    help: { type: 'boolean', short: 'h' },
  });
  if (a.help) { console.log(HELP); return 0; }
  const port = num('--port', a.port, { min: 0, max: 65535, int: true })!;
  const header = openModelHeader(a.model!);
  const eo = engineOptions(a.model!, a, metaNumber(header, 'qwen35moe.context_length', 262144));
  let engine;
  try { engine = await openEngine(eo); } catch (e) { throw new CliError((e as Error).message); }
  process.stderr.write(engine.describe() + '\n');
  const { app, ctx } = await buildApp({
    engine, cors: a.cors, apiKey: a['api-key'], trace: a.trace, exactToolReplay: !a['disable-exact-tool-replay'],
    toolMemoryMaxIds: num('--tool-memory-max-ids', a['tool-memory-max-ids'], { min: 1, int: true }),
    bodyLimit: num('--max-body-mb', a['max-body-mb'], { min: 1 })! * 2 ** 20, defaultMaxTokens: num('--max-tokens', a['max-tokens'], { min: 1, int: true }),
    kvDisk: a['kv-disk-dir'] ? {
      dir: a['kv-disk-dir'], spaceMiB: num('--kv-disk-space-mb', a['kv-disk-space-mb'], { min: 1 })!,
      minTokens: num('--kv-cache-min-tokens', a['kv-cache-min-tokens'], { min: 1, int: true }),
      coldMaxTokens: num('--kv-cache-cold-max-tokens', a['kv-cache-cold-max-tokens'], { min: 1, int: true }),
      continuedIntervalTokens: num('--kv-cache-continued-interval-tokens', a['kv-cache-continued-interval-tokens'], { min: 1, int: true }),
      trimTokens: num('--kv-cache-boundary-trim-tokens', a['kv-cache-boundary-trim-tokens'], { min: 0, int: true }),
      alignTokens: num('--kv-cache-boundary-align-tokens', a['kv-cache-boundary-align-tokens'], { min: 1, int: true }),
    } : undefined,
    log: (m) => process.stderr.write(m + '\n'),
  });
  const addr = await app.listen({ host: a.host, port });
  process.stderr.write(`q36-server listening on ${addr}\n`);
  // clean exit: the live session goes to the disk cache (reason "shutdown") before the process ends
  const stop = async () => { await app.close(); ctx.coordinator.saveLive('shutdown'); ctx.coordinator.dispose(); engine.dispose(); process.exit(0); };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return 0;
}

main().catch((e) => {
  console.error(`q36-server: ${(e as Error).message}`);
  process.exitCode = e instanceof CliError ? e.exitCode : 1;
});
