/**
 * `npm run test:clients`: the real coding agents, as users run them, against q36-server.
 *
 * Installs Claude Code, Codex, opencode, Pi and Qwen Code from npm (into --clients-dir, default
 * ~/.cache/q36-clients; reused when present), starts q36-server (tinyA on the CPU by default:
 * default settings otherwise), and runs each agent non-interactively with a throwaway HOME whose
 * config points at the server through a recording proxy. Every request an agent sends must get a
 * 200, or a context-length refusal in that provider's own error shape (tinyA's context is 4096
 * tokens; agents open with 10-47K-token prompts, so refusals are expected and their handling is
 * the point: each agent must recognise them). Prints a table with versions and statuses; exit 1
 * when any request got anything else. Loopback only; each agent is bounded by --timeout.
 *
 * usage: node dist/scripts/qa/test-clients.js [--model FILE] [--clients-dir DIR] [--only NAME,...]
 *          [--record DIR] [--timeout S] [--server-args "..."] [--parallel]
 * --server-args: more q36-server flags (e.g. "--batched-session 5"; one with --vulkan drops the
 * default --cpu); --parallel runs the agents at once (several sessions against one server).
 * --record DIR writes each agent's requests to DIR/NAME.json (the CI replay in test/clients-replay.test.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { acceptable } from '../lib/client-check.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const argv = process.argv.slice(2);
const flag = (name: string) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const MODEL = flag('--model') ?? path.join(ROOT, 'fixtures/tinyA/tinyA-q2.gguf');
const CLIENTS = flag('--clients-dir') ?? path.join(os.homedir(), '.cache', 'q36-clients');
const RECORD = flag('--record');
const TIMEOUT_S = Number(flag('--timeout') ?? 240);
const ONLY = flag('--only')?.split(',');
const SERVER_ARGS = (flag('--server-args') ?? '').split(/\s+/).filter(Boolean);
const PARALLEL = argv.includes('--parallel');
const MODEL_ID = 'qwen3.6-35b-a3b';

interface Recorded { method: string; url: string; status: number; request: string; response: string }

interface Client {
  name: string;
  pkg: string;
  bin: string;
  /** writes the agent's config under home; returns argv and env */
  setup(home: string, base: string): { args: string[]; env: Record<string, string> };
}

const CLIENT_LIST: Client[] = [
  {
    name: 'claude-code', pkg: '@anthropic-ai/claude-code', bin: 'claude',
    setup: (_home, base) => ({
      args: ['-p', 'Say hi.', '--output-format', 'json'],
      env: { ANTHROPIC_BASE_URL: base, ANTHROPIC_API_KEY: 'local', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' },
    }),
  },
  {
    name: 'codex', pkg: '@openai/codex', bin: 'codex',
    setup: (home, base) => {
      fs.mkdirSync(path.join(home, '.codex'), { recursive: true });
      fs.writeFileSync(path.join(home, '.codex', 'config.toml'), `model = "${MODEL_ID}"\nmodel_provider = "q36"\n\n[model_providers.q36]\nname = "QuarkStar"\nbase_url = "${base}/v1"\nwire_api = "responses"\n`);
      return { args: ['exec', '--skip-git-repo-check', 'Say hi.'], env: {} };
    },
  },
  {
    name: 'opencode', pkg: 'opencode-ai', bin: 'opencode',
    setup: (home, base) => {
      fs.mkdirSync(path.join(home, '.config', 'opencode'), { recursive: true });
      fs.writeFileSync(path.join(home, '.config', 'opencode', 'opencode.json'), JSON.stringify({
        $schema: 'https://opencode.ai/config.json',
        provider: { q36: { npm: '@ai-sdk/openai-compatible', name: 'QuarkStar', options: { baseURL: `${base}/v1`, apiKey: 'local' }, models: { [MODEL_ID]: { name: 'Qwen3.6 35B-A3B (QuarkStar)' } } } },
        model: `q36/${MODEL_ID}`,
      }, null, 2));
      return { args: ['run', 'Say hi.'], env: {} };
    },
  },
  {
    name: 'pi', pkg: '@mariozechner/pi-coding-agent', bin: 'pi',
    setup: (home, base) => {
      fs.mkdirSync(path.join(home, '.pi', 'agent'), { recursive: true });
      fs.writeFileSync(path.join(home, '.pi', 'agent', 'models.json'), JSON.stringify({
        providers: { q36: { baseUrl: `${base}/v1`, api: 'openai-completions', apiKey: 'local', models: [{ id: MODEL_ID, name: 'Qwen3.6 35B-A3B (QuarkStar)', reasoning: true, input: ['text'], contextWindow: 65536, maxTokens: 4096 }] } },
      }, null, 2));
      return { args: ['--provider', 'q36', '--model', MODEL_ID, '-p', 'Say hi.'], env: {} };
    },
  },
  {
    name: 'qwen-code', pkg: '@qwen-code/qwen-code', bin: 'qwen',
    setup: (home, base) => {
      fs.mkdirSync(path.join(home, '.qwen'), { recursive: true });
      fs.writeFileSync(path.join(home, '.qwen', 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'openai' } } }));
      return { args: ['Say hi.'], env: { OPENAI_API_KEY: 'local', OPENAI_BASE_URL: `${base}/v1`, OPENAI_MODEL: MODEL_ID } };
    },
  },
];

function install(clients: Client[]): Record<string, string> {
  fs.mkdirSync(CLIENTS, { recursive: true });
  const missing = clients.filter((c) => !fs.existsSync(path.join(CLIENTS, 'node_modules', '.bin', c.bin)));
  if (missing.length) {
    console.log(`installing ${missing.map((c) => c.pkg).join(' ')} into ${CLIENTS}`);
    if (!fs.existsSync(path.join(CLIENTS, 'package.json'))) fs.writeFileSync(path.join(CLIENTS, 'package.json'), '{"private":true}\n');
    const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', ...missing.map((c) => c.pkg)], { cwd: CLIENTS, stdio: 'inherit', timeout: 900_000 });
    if (r.status !== 0) throw new Error('npm install of the clients failed');
  }
  const versions: Record<string, string> = {};
  for (const c of clients) versions[c.name] = JSON.parse(fs.readFileSync(path.join(CLIENTS, 'node_modules', c.pkg, 'package.json'), 'utf8')).version;
  return versions;
}

async function startServer(): Promise<{ base: string; stop: () => void; log: () => string }> {
  const backend = SERVER_ARGS.includes('--vulkan') ? [] : ['--cpu'];
  const p = spawn(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36-server.js'), '-m', MODEL, ...backend, '--port', '0', ...SERVER_ARGS]);
  let log = '';
  p.stderr.on('data', (d) => { log += d; });
  const base = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`q36-server did not start: ${log}`)); }, 60_000);
    p.stderr.on('data', () => { const m = /serving on (http:\/\/\S+)/.exec(log); if (m) { clearTimeout(t); resolve(m[1]); } });
    p.on('exit', () => reject(new Error(`q36-server exited: ${log}`)));
  });
  return { base, stop: () => p.kill('SIGKILL'), log: () => log };
}

/** A recording proxy in front of the server (one per client, so requests are attributed). */
async function proxy(target: string): Promise<{ base: string; records: Recorded[]; close: () => void }> {
  const records: Recorded[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const rec: Recorded = { method: req.method!, url: req.url!, status: 0, request: body.toString('utf8'), response: '' };
    records.push(rec);
    try {
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection', 'accept-encoding'].includes(k)) as [string, string][]);
      const r = await fetch(target + req.url, { method: req.method, headers, body: ['GET', 'HEAD'].includes(req.method!) ? undefined : body });
      rec.status = r.status;
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
      const reader = r.body?.getReader();
      if (reader) for (;;) { const { done, value } = await reader.read(); if (done) break; rec.response += Buffer.from(value).toString('utf8').slice(0, 4096 - rec.response.length); res.write(value); }
      res.end();
    } catch (e) {
      rec.status = 502;
      res.writeHead(502); res.end(String(e));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, records, close: () => server.close() };
}

/** Runs a client to completion (stdin closed), killed after --timeout. */
function run(cmd: string, args: string[], o: { cwd: string; env: Record<string, string> }): Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const t = setTimeout(() => p.kill('SIGKILL'), TIMEOUT_S * 1000);
    p.on('close', (status, signal) => { clearTimeout(t); resolve({ status, signal, stdout, stderr }); });
  });
}

async function main(): Promise<number> {
  const clients = CLIENT_LIST.filter((c) => !ONLY || ONLY.includes(c.name));
  const versions = install(clients);
  const server = await startServer();
  let failed = 0;
  const rows: string[] = [];
  const one = async (c: Client) => {
    const px = await proxy(server.base);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), `q36-client-${c.name}-`));
    const work = fs.mkdtempSync(path.join(os.tmpdir(), `q36-work-${c.name}-`));
    const { args, env } = c.setup(home, px.base);
    const t0 = Date.now();
    // (asynchronous: the recording proxy runs in this process)
    const r = await run(path.join(CLIENTS, 'node_modules', '.bin', c.bin), args, {
      cwd: work, env: { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb', NO_COLOR: '1', CI: '1', ...env },
    });
    px.close();
    const api = px.records.filter((x) => x.url.startsWith('/v1') || x.url === '/');
    const bad = api.filter((x) => !acceptable(x));
    const statuses = api.map((x) => `${x.method} ${x.url.split('?')[0]} ${x.status}`).reduce<Record<string, number>>((m, k) => ((m[k] = (m[k] ?? 0) + 1), m), {});
    const ok = api.length > 0 && bad.length === 0;
    if (!ok) failed++;
    rows.push(`${c.name.padEnd(12)} ${versions[c.name].padEnd(10)} exit ${String(r.status ?? r.signal).padEnd(4)} ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s  ${ok ? 'ok  ' : 'FAIL'}  ${Object.entries(statuses).map(([k, n]) => `${k} ×${n}`).join(', ') || 'no requests'}`);
    for (const b of bad) rows.push(`             unexpected: ${b.method} ${b.url} ${b.status} ${b.response.slice(0, 200)}`);
    if (!api.length) rows.push(`             output: ${(r.stdout + r.stderr).trim().split('\n').slice(-3).join(' | ').slice(0, 300)}`);
    if (RECORD) {
      fs.mkdirSync(RECORD, { recursive: true });
      const posts = px.records.filter((x) => x.method === 'POST').slice(0, 4).map((x) => ({ url: x.url, status: x.status, body: JSON.parse(x.request) }));
      fs.writeFileSync(path.join(RECORD, `${c.name}.json`), JSON.stringify({ client: c.pkg, version: versions[c.name], recorded: new Date().toISOString().slice(0, 10), requests: posts }) + '\n');
    }
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(work, { recursive: true, force: true });
  };
  try {
    if (PARALLEL) await Promise.all(clients.map(one));
    else for (const c of clients) await one(c);
  } finally {
    server.stop();
  }
  const slots = /sessions +(\d+) slots/.exec(server.log())?.[1];
  console.log(`q36-server (${path.relative(process.cwd(), MODEL)}, ${SERVER_ARGS.includes('--vulkan') ? 'Vulkan' : 'CPU'}, ${SERVER_ARGS.length ? SERVER_ARGS.join(' ') : 'default settings'}${slots ? `: ${slots} slots` : ''}) with the agents from npm${PARALLEL ? ', all at once' : ''}, ${new Date().toISOString()}`);
  for (const r of rows) console.log(r);
  console.log(`${clients.length - failed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

main().then((c) => process.exit(c), (e) => { console.error(`test-clients: ${(e as Error).stack}`); process.exit(2); });
