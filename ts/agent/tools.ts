/**
 * The agent's tools, in Qwen3.6's own tool format (their JSON schemas go into the system prompt
 * through the chat template; calls come back as <tool_call> blocks the output parser reads). Each
 * returns the text of a <tool_response>; a failure is a ToolError whose message the model reads.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ToolError, type Workspace } from './workspace.js';
import { webFetch } from './web-fetch.js';
import { readRegular } from '../safe-file.js';

type Args = Record<string, unknown>;
export interface ToolContext { ws: Workspace; signal?: AbortSignal; limits: ToolLimits }
export interface ToolLimits { outputChars: number; shellTimeoutS: number; readLines: number }
export const DEFAULT_LIMITS: ToolLimits = { outputChars: 30_000, shellTimeoutS: 120, readLines: 2000 };

interface Tool { description: string; parameters: Record<string, unknown>; required: string[]; run(a: Args, c: ToolContext): Promise<string> }

const str = (description: string) => ({ type: 'string', description });
const int = (description: string) => ({ type: 'integer', description });

function need(a: Args, k: string): string {
  if (typeof a[k] !== 'string') throw new ToolError(`${k} must be a string`);
  return a[k] as string;
}
function optInt(a: Args, k: string, min: number): number | undefined {
  if (a[k] === undefined || a[k] === null) return undefined;
  const n = Number(a[k]);
  if (!Number.isInteger(n) || n < min) throw new ToolError(`${k} must be an integer ≥ ${min}`);
  return n;
}
function cap(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n)}\n[… ${s.length - n} more characters cut: output cap ${n}]`;
}
function fsError(e: unknown, what: string): never {
  const code = (e as NodeJS.ErrnoException).code;
  throw new ToolError(code === 'ENOENT' ? `${what}: no such file or directory` : code === 'EISDIR' ? `${what}: is a directory` : code === 'ENOTDIR' ? `${what}: not a directory` : `${what}: ${(e as Error).message}`);
}

/**
 * The matching runs in a worker thread: a pattern that backtracks catastrophically (`(a+)+$`)
 * would otherwise hold the agent's only thread, past Ctrl+C. The worker is ended after the
 * shell-command timeout or on Ctrl+C. Only regular files are read (a FIFO would block it).
 */
const SEARCH_WORKER = `
const { parentPort, workerData: w } = require('node:worker_threads');
const fs = require('node:fs'), path = require('node:path');
const rx = new RegExp(w.pattern), hits = [];
for (const f of w.files) {
  const full = f ? path.join(w.base, f) : w.base;
  let text;
  try { if (!fs.lstatSync(full).isFile()) continue; text = fs.readFileSync(full, 'utf8'); } catch { continue; }
  if (text.includes('\\u0000')) continue;
  const lines = text.split('\\n');
  for (let i = 0; i < lines.length && hits.length < w.max; i++) if (rx.test(lines[i])) hits.push(path.relative(w.root, full) + ':' + (i + 1) + ':' + lines[i]);
}
parentPort.postMessage(hits);
`;

function searchInWorker(job: { files: string[]; base: string; root: string; pattern: string; max: number }, timeoutS: number, signal?: AbortSignal): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const w = new Worker(SEARCH_WORKER, { eval: true, workerData: job });
    const stop = (why: string) => { clearTimeout(t); signal?.removeEventListener('abort', onAbort); void w.terminate(); reject(new ToolError(why)); };
    const t = setTimeout(() => stop(`search stopped after ${timeoutS} s (a pattern such as (a+)+$ can take forever: simplify it)`), timeoutS * 1000);
    const onAbort = () => stop('search interrupted');
    signal?.addEventListener('abort', onAbort, { once: true });
    w.once('message', (hits: string[]) => { clearTimeout(t); signal?.removeEventListener('abort', onAbort); void w.terminate(); resolve(hits); });
    w.once('error', (e) => stop(`search failed: ${e.message}`));
  });
}

/** Files under dir (relative paths, sorted), skipping .git and node_modules, matching a glob. */
function walk(root: string, dir: string, glob: RegExp | undefined, out: string[], max: number): void {
  let ents: fs.Dirent[];
  try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of ents.sort((a, b) => a.name.localeCompare(b.name))) {
    if (out.length >= max) return;
    if (e.name === '.git' || e.name === 'node_modules') continue;
    const p = path.join(dir, e.name), rel = path.relative(root, p);
    if (e.isDirectory()) walk(root, p, glob, out, max);
    else if (e.isFile() && (!glob || glob.test(rel) || glob.test(e.name))) out.push(rel);
  }
}

/** A glob (*, **, ?) as a regex over relative paths. */
export function globRegex(g: string): RegExp {
  let r = '';
  for (let i = 0; i < g.length; i++) {
    const ch = g[i];
    if (ch === '*') { if (g[i + 1] === '*') { r += '.*'; i++; if (g[i + 1] === '/') i++; } else r += '[^/]*'; }
    else if (ch === '?') r += '[^/]';
    else r += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${r}$`);
}

/** Runs a command in the workspace: exit code, output (capped), a timeout that kills it. */
function shell(command: string, c: ToolContext, timeoutS: number): Promise<string> {
  return new Promise((resolve) => {
    const p = spawn('/bin/sh', ['-c', command], { cwd: c.ws.root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    const add = (d: Buffer) => { if (out.length < c.limits.outputChars * 2) out += d.toString('utf8'); };
    p.stdout.on('data', add); p.stderr.on('data', add);
    let why = '';
    const kill = (reason: string) => { why = reason; try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ } };
    const t = setTimeout(() => kill(`timed out after ${timeoutS} s`), timeoutS * 1000);
    const onAbort = () => kill('stopped by the user');
    c.signal?.addEventListener('abort', onAbort);
    p.on('close', (code, sig) => {
      clearTimeout(t);
      c.signal?.removeEventListener('abort', onAbort);
      const status = why ? `[${why}]` : sig ? `[killed by ${sig}]` : `[exit code ${code}]`;
      resolve(`${status}\n${cap(out, c.limits.outputChars)}`);
    });
    p.on('error', (e) => { clearTimeout(t); resolve(`[could not start: ${e.message}]`); });
  });
}

/** Background processes started by process_start (killed when the agent exits). */
export class Processes {
  private next = 1;
  readonly procs = new Map<number, { p: ChildProcess; out: string; read: number; command: string; code?: number | null }>();
  start(command: string, cwd: string): number {
    const id = this.next++;
    const p = spawn('/bin/sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const e = { p, out: '', read: 0, command, code: undefined as number | null | undefined };
    const add = (d: Buffer) => { e.out = (e.out + d.toString('utf8')).slice(-1_000_000); };
    p.stdout!.on('data', add); p.stderr!.on('data', add);
    p.on('close', (code) => { e.code = code; });
    this.procs.set(id, e);
    return id;
  }
  stopAll(): void { for (const e of this.procs.values()) if (e.code === undefined) { try { process.kill(-e.p.pid!, 'SIGKILL'); } catch { /* gone */ } } }
}

export function makeTools(procs: Processes): Record<string, Tool> {
  const get = (a: Args) => {
    const id = optInt(a, 'id', 1);
    const e = id !== undefined ? procs.procs.get(id) : undefined;
    if (!e) throw new ToolError(`no background process ${a.id} (process_start gives the ids)`);
    return { id: id!, e };
  };
  return {
    read_file: {
      description: 'Read a text file; each line comes as its number, a tab, and the text. Give offset and limit to read a range.',
      parameters: { path: str('file path, relative to the workspace'), offset: int('first line (1-based)'), limit: int('number of lines') }, required: ['path'],
      async run(a, c) {
        const p = await c.ws.resolve(a.path, 'read');
        let text: string;
        // a FIFO or device would block the agent beyond Ctrl+C: only regular files are read
        try { text = readRegular(p).toString('utf8'); } catch (e) { if ((e as NodeJS.ErrnoException).code === 'ENOTREG') throw new ToolError(`${a.path}: ${(e as Error).message.split(': ').pop()}: not read`); fsError(e, String(a.path)); }
        // (a final newline ends the last line; it does not start an empty one)
        const lines = text.split('\n');
        if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
        const from = (optInt(a, 'offset', 1) ?? 1) - 1, n = optInt(a, 'limit', 1) ?? c.limits.readLines;
        if (from >= lines.length && lines.length > 0 && from > 0) throw new ToolError(`${a.path} has ${lines.length} lines; offset ${from + 1} is past the end`);
        const shown = lines.slice(from, from + n).map((l, i) => `${from + i + 1}\t${l}`).join('\n');
        const more = from + n < lines.length ? `\n[… ${lines.length - from - n} more lines: read with offset ${from + n + 1}]` : '';
        return cap(shown + more, c.limits.outputChars);
      },
    },
    write_file: {
      description: 'Create or overwrite a file with the given content (parent directories are created).',
      parameters: { path: str('file path'), content: str('the whole new content') }, required: ['path', 'content'],
      async run(a, c) {
        const p = await c.ws.resolve(a.path, 'write');
        const content = need(a, 'content');
        try { fs.mkdirSync(path.dirname(p), { recursive: true }); fs.writeFileSync(p, content); } catch (e) { fsError(e, String(a.path)); }
        return `wrote ${Buffer.byteLength(content)} bytes to ${a.path}`;
      },
    },
    edit_file: {
      description: 'Replace an exact text in a file. old_text must occur exactly once unless replace_all is true.',
      parameters: { path: str('file path'), old_text: str('the exact text to replace'), new_text: str('its replacement'), replace_all: { type: 'boolean', description: 'replace every occurrence' } },
      required: ['path', 'old_text', 'new_text'],
      async run(a, c) {
        const p = await c.ws.resolve(a.path, 'edit');
        const oldT = need(a, 'old_text'), newT = need(a, 'new_text');
        if (!oldT) throw new ToolError('old_text is empty');
        let text: string;
        try { text = fs.readFileSync(p, 'utf8'); } catch (e) { fsError(e, String(a.path)); }
        const count = text.split(oldT).length - 1;
        if (count === 0) throw new ToolError(`old_text was not found in ${a.path} (it must match exactly, whitespace included)`);
        if (count > 1 && a.replace_all !== true) throw new ToolError(`old_text occurs ${count} times in ${a.path}: give more context to make it unique, or replace_all: true`);
        fs.writeFileSync(p, a.replace_all === true ? text.split(oldT).join(newT) : text.replace(oldT, () => newT));
        return `replaced ${a.replace_all === true ? count : 1} occurrence(s) in ${a.path}`;
      },
    },
    list_files: {
      description: 'List files under a directory (recursively), optionally matching a glob such as "**/*.ts".',
      parameters: { path: str('directory (default: the workspace)'), glob: str('glob over relative paths') }, required: [],
      async run(a, c) {
        const dir = await c.ws.resolve(a.path ?? '.', 'list');
        if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new ToolError(`${a.path ?? '.'}: not a directory`);
        const out: string[] = [];
        walk(dir, dir, typeof a.glob === 'string' && a.glob ? globRegex(a.glob) : undefined, out, 2000);
        return out.length ? out.join('\n') + (out.length >= 2000 ? '\n[… more files: narrow the glob]' : '') : '(no files)';
      },
    },
    search: {
      description: 'Search file contents for a regular expression; prints path:line:text.',
      parameters: { pattern: str('JavaScript regular expression'), path: str('directory or file (default: the workspace)'), glob: str('only files matching this glob') }, required: ['pattern'],
      async run(a, c) {
        // checked here (a clear error), run in the worker
        try { new RegExp(need(a, 'pattern')); } catch (e) { throw new ToolError(`pattern: ${(e as Error).message}`); }
        const base = await c.ws.resolve(a.path ?? '.', 'search');
        if (!fs.existsSync(base)) throw new ToolError(`${a.path}: no such file or directory`);
        const files: string[] = [];
        if (fs.statSync(base).isDirectory()) walk(base, base, typeof a.glob === 'string' && a.glob ? globRegex(a.glob) : undefined, files, 20_000);
        else files.push('');
        const hits = await searchInWorker({ files, base, root: c.ws.root, pattern: need(a, 'pattern'), max: 500 }, c.limits.shellTimeoutS, c.signal);
        return hits.length ? cap(hits.join('\n'), c.limits.outputChars) : '(no matches)';
      },
    },
    run_shell: {
      description: 'Run a shell command in the workspace and wait for it (exit code and output; killed after the timeout).',
      parameters: { command: str('the command line'), timeout_s: int('seconds before it is killed (default 120)') }, required: ['command'],
      async run(a, c) {
        const command = need(a, 'command');
        if (!(await c.ws.ok(`run: ${command}`))) throw new ToolError(`the user did not allow running: ${command}`);
        return shell(command, c, optInt(a, 'timeout_s', 1) ?? c.limits.shellTimeoutS);
      },
    },
    process_start: {
      description: 'Start a long-running command in the background (a server, a watcher); returns its id.',
      parameters: { command: str('the command line') }, required: ['command'],
      async run(a, c) {
        const command = need(a, 'command');
        if (!(await c.ws.ok(`start in the background: ${command}`))) throw new ToolError(`the user did not allow running: ${command}`);
        return `started process ${procs.start(command, c.ws.root)}`;
      },
    },
    process_read: {
      description: 'Read the new output of a background process, and whether it has exited.',
      parameters: { id: int('process id') }, required: ['id'],
      async run(a, c) {
        const { id, e } = get(a);
        const fresh = e.out.slice(e.read);
        e.read = e.out.length;
        return `[process ${id} ${e.code === undefined ? 'running' : `exited with code ${e.code}`}]\n${cap(fresh, c.limits.outputChars)}`;
      },
    },
    process_stop: {
      description: 'Stop a background process.',
      parameters: { id: int('process id') }, required: ['id'],
      async run(a) {
        const { id, e } = get(a);
        if (e.code !== undefined) return `process ${id} had already exited (code ${e.code})`;
        try { process.kill(-e.p.pid!, 'SIGTERM'); } catch { /* gone */ }
        return `stopped process ${id}`;
      },
    },
    web_fetch: {
      description: 'Fetch a URL (http or https) and return its text.',
      parameters: { url: str('the URL') }, required: ['url'],
      async run(a, c) {
        const url = need(a, 'url');
        if (!/^https?:\/\//.test(url)) throw new ToolError('url must start with http:// or https://');
        try {
          // at most 4 bytes a character of what the answer keeps
          return cap(await webFetch(url, { ws: c.ws, signal: c.signal, maxBytes: 4 * c.limits.outputChars }), c.limits.outputChars);
        } catch (e) {
          if (e instanceof ToolError) throw e;
          throw new ToolError(`could not fetch ${url}: ${(e as Error).message}${(e as { cause?: { code?: string } }).cause?.code ? ` (${(e as { cause: { code: string } }).cause.code})` : ''}; this machine may be offline`);
        }
      },
    },
  };
}

/** The tools in the chat template's format (OpenAI-style function objects, as Qwen's template takes them). */
export function toolSpecs(tools: Record<string, Tool>): Record<string, unknown>[] {
  return Object.entries(tools).map(([name, t]) => ({ type: 'function', function: { name, description: t.description, parameters: { type: 'object', properties: t.parameters, required: t.required } } }));
}

/** Runs one call; a ToolError (or an unknown tool) becomes an error text the model reads. */
export async function runTool(tools: Record<string, Tool>, name: string, args: Args, c: ToolContext): Promise<{ ok: boolean; text: string }> {
  const t = tools[name];
  if (!t) return { ok: false, text: `error: there is no tool named ${JSON.stringify(name)} (tools: ${Object.keys(tools).join(', ')})` };
  try { return { ok: true, text: await t.run(args, c) }; } catch (e) {
    if (e instanceof ToolError) return { ok: false, text: `error: ${e.message}` };
    return { ok: false, text: `error: ${name} failed: ${(e as Error).message}` };
  }
}
