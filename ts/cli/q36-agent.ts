#!/usr/bin/env node
/**
 * q36-agent: the native coding agent (ts/agent/): inference in process, Qwen3.6's own tool
 * format, transcript and KV state one session, saved sessions switched without prefill.
 *   q36-agent [--chdir DIR] [--yes] [-m MODEL] [--cpu|--vulkan] [--ctx N] [-ctk T -ctv T]
 *   q36-agent --non-interactive -p "TASK"
 * docs/agent.md.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { Agent, type AgentUi } from '../agent/agent.js';
import { SessionStore } from '../agent/sessions.js';
import { exitWithAgentOnSignals } from '../agent/signals.js';
import { Workspace } from '../agent/workspace.js';
import { AGENT_CTX } from '../engine/defaults.js';
import { openEngine } from '../engine/index.js';
import { readEnv, modelEnv } from './env.js';
import { CliError, openModelHeader } from './load-tokenizer.js';
import { ENGINE_PARSE_OPTIONS, draftSpec, engineOptions, num, parseCliArgs } from './options.js';
import { safeForTerminal } from '../terminal.js';
import { printVersionIfAsked } from './version.js';
import { wrapHelp } from './help.js';
import { defaultModel } from './model-store.js';

const HELP = `usage: q36-agent [--chdir DIR] [--yes] [-m MODEL] [--cpu|--vulkan] [--ctx N] [-ctk T -ctv T] [--tokens N] [--nothink]
                 [--temp T] [--seed S] [--sessions-dir DIR]
       q36-agent --non-interactive -p "TASK" [...]
Presets: ctx 32768 with q8_0 K / q4_0 V on Vulkan (f16 KV on the CPU); with --ssd-streaming ctx 100000, f16 KV. Sessions: ~/.q36/kvcache/sessions (or Q36_AGENT_SESSIONS).
SSD streaming: --ssd-streaming [--ssd-streaming-cache-experts N|SIZE] [--ssd-streaming-cold | --ssd-streaming-preload-experts N]
[--ssd-streaming-full-layers N], as q36 (F16 KV unless -ctk/-ctv; docs/ssd-streaming.md).
Speculative decoding: --draft ngram [--draft-max N (4)] verifies drafts looked up in the context several
a step; the tokens are the same as without, sampled ones too (docs/speculative.md); --mtp FILE|auto
[--mtp-draft N (2)] [--mtp-margin F] drafts with the model's MTP head instead (with --draft ngram: after it).`;

const COMMANDS = `commands:
  /save           save this session (transcript and KV state)
  /list           saved sessions, most recent first
  /switch ID      resume a saved session (its KV state, no prefill; a stripped one is prefilled)
  /del ID         delete a saved session
  /strip ID       keep a session's transcript and title, drop its KV payload
  /compact        summarise the work so far and restart the context from it
  /think /nothink thinking on (default) or off
  /help /quit
Ctrl+C stops a generation or a running tool; twice at the prompt exits.`;

async function main(): Promise<number> {
  if (printVersionIfAsked('q36-agent')) return 0;
  const a = parseCliArgs({
    ...ENGINE_PARSE_OPTIONS, model: { type: 'string', short: 'm', default: defaultModel(modelEnv()) }, chdir: { type: 'string' },
    'non-interactive': { type: 'boolean' }, prompt: { type: 'string', short: 'p' }, yes: { type: 'boolean' },
    'sessions-dir': { type: 'string' }, tokens: { type: 'string', default: '8192' }, 'max-steps': { type: 'string', default: '50' },
    nothink: { type: 'boolean' }, temp: { type: 'string', default: '0.6' }, 'top-p': { type: 'string', default: '0.95' }, 'top-k': { type: 'string', default: '20' },
    seed: { type: 'string', default: '0' }, help: { type: 'boolean', short: 'h' },
  });
  if (a.help) { console.log(wrapHelp(`${HELP}\n${COMMANDS}`)); return 0; }
  if (a['non-interactive'] && !a.prompt) throw new CliError('--non-interactive needs -p "TASK"');
  const root = path.resolve(a.chdir ?? '.');
  let ws: Workspace;
  const interactive = !a['non-interactive'];
  let rl: readline.Interface | undefined;
  const ask = (q: string) => new Promise<boolean>((resolve) => {
    if (!rl) { process.stderr.write(`refused (non-interactive, no --yes): ${q}\n`); resolve(false); return; }
    rl.question(`allow ${q}? [y/N] `, (ans) => resolve(/^y(es)?$/i.test(ans.trim())));
  });
  try { ws = new Workspace({ root, yes: a.yes, confirm: ask }); } catch (e) { throw new CliError(`--chdir ${root}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (e as Error).message}`); }
  const sessionsDir = a['sessions-dir'] ?? readEnv().agentSessions ?? path.join(os.homedir(), '.q36', 'kvcache', 'sessions');
  const header = openModelHeader(a.model!);
  const native = Number(header.metadata.get('qwen35moe.context_length')?.value ?? 262144);
  // the agent presets (defaults.ts AGENT_CTX) unless --ctx says otherwise (the model's own if smaller)
  const draft = draftSpec(a, ['ngram'], { mtp: true });
  const eo = engineOptions(a.model!, { ...a, ctx: a.ctx ?? String(Math.min(a['ssd-streaming'] ? AGENT_CTX.streaming : AGENT_CTX.resident, native)) }, native, draft);
  let engine;
  try { engine = await openEngine(eo); } catch (e) { throw new CliError((e as Error).message); }
  const tty = Boolean(process.stdout.isTTY);
  const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[22m` : s);
  const shown = (s: string) => (tty ? safeForTerminal(s) : s);
  const out = (s: string) => process.stdout.write(s);
  let inReasoning = false;
  // non-interactive: stdout gets the final answer only; the work shows on stderr as it happens
  // (the model's thinking dimmed on a terminal, tool calls and their results, notes)
  const errTty = Boolean(process.stderr.isTTY);
  const thinking = (t: string) => process.stderr.write(errTty ? `\x1b[2m${safeForTerminal(t)}\x1b[22m` : t);
  const ui: AgentUi = {
    reasoning: (t) => { inReasoning = true; if (interactive) out(dim(shown(t))); else thinking(t); },
    content: (t) => {
      if (!interactive) { if (inReasoning) { process.stderr.write('\n'); inReasoning = false; } return; }
      if (inReasoning) { out('\n\n'); inReasoning = false; }
      out(shown(t));
    },
    toolStart: (n, args) => { if (inReasoning) { (interactive ? out : (x: string) => process.stderr.write(x))('\n'); inReasoning = false; } process.stderr.write(`\n→ ${n} ${shown(JSON.stringify(args)).slice(0, 200)}\n`); },
    toolEnd: (_n, ok, t) => process.stderr.write(dim(`${ok ? '' : '✗ '}${shown(t.split('\n').slice(0, 3).join('\n')).slice(0, 400)}\n`)),
    prefill: (d, t) => { if (t > 256 && process.stderr.isTTY) process.stderr.write(`\rprefill ${d}/${t}${d === t ? '\n' : ''}`); },
    note: (t) => process.stderr.write(dim(`[${t}]\n`)),
  };
  const store = new SessionStore(sessionsDir, (w) => process.stderr.write(`warning: ${w}\n`));
  const sampling = { temperature: num('--temp', a.temp, { min: 0 })!, topP: num('--top-p', a['top-p'], { min: 0, max: 1 })!, topK: num('--top-k', a['top-k'], { min: 0, int: true })!, minP: 0 };
  let agent: Agent;
  try {
    agent = new Agent({ engine, workspace: ws, store, think: !a.nothink, sampling, maxTokens: num('--tokens', a.tokens, { min: 16, int: true })!, maxSteps: num('--max-steps', a['max-steps'], { min: 1, int: true })!, ui, draft });
  } catch (e) {
    engine.dispose();
    throw e instanceof CliError ? e : new CliError((e as Error).message);
  }
  exitWithAgentOnSignals(() => agent.dispose());
  agent.session.seed(num('--seed', a.seed, { int: true })!);
  try {
    if (!interactive) {
      const r = await agent.send(a.prompt!);
      if (r.stopped) process.stderr.write(`[${r.stopped}]\n`);
      if (r.answer.trim()) console.log(r.answer);
      return r.answer.trim() && !r.stopped ? 0 : 1;
    }
    rl = readline.createInterface({ input: process.stdin, output: process.stdout, prompt: 'agent> ', terminal: tty, historySize: 1000 });
    out(`QuarkStar agent — ${engine.backend}, ctx ${eo.ctx}, working in ${ws.root}. /help for commands.\n`);
    let busy: AbortController | null = null;
    let lastSigint = 0;
    let closed = false;
    rl.on('SIGINT', () => {
      if (busy) { busy.abort(); return; }
      const now = Date.now();
      if (now - lastSigint < 3000) { rl!.close(); return; }
      lastSigint = now;
      out('\n(press Ctrl+C again to exit)\n');
      rl!.prompt();
    });
    const command = async (line: string): Promise<boolean> => {
      const [cmd, arg] = line.trim().split(/\s+/, 2);
      switch (cmd) {
        case '/help': out(`${COMMANDS}\n`); return true;
        case '/quit': case '/exit': closed = true; rl!.close(); return true;
        case '/think': case '/nothink':
          // the same session goes on (its id, KV state, background processes); the next prompt renders the new mode
          agent.think = cmd === '/think';
          out(`thinking ${agent.think ? 'on' : 'off'}\n`);
          return true;
        case '/save': { const r = agent.save(); out(`saved session ${r.id}: ${r.title}\n`); return true; }
        case '/list': {
          const all = store.list();
          if (!all.length) out('no saved sessions\n');
          for (const r of all) out(`${r.id}  ${new Date(r.updated).toISOString().slice(0, 16).replace('T', ' ')}  ${r.hasPayload ? 'kv  ' : 'text'}  ${r.title}\n`);
          return true;
        }
        case '/switch': {
          if (!arg) { out('usage: /switch ID\n'); return true; }
          if (!store.find(arg)) { out(`no saved session ${arg} (/list)\n`); return true; }
          // the conversation being left is kept, not replaced without a word
          if (agent.unsaved()) { const s = agent.save(); out(`saved the current session first: ${s.id}: ${s.title}\n`); }
          const r = await agent.switchTo(arg);
          if (r) out(`switched to ${r.record.id}: ${r.record.title}${r.prefilled ? ' (rebuilt by prefill)' : ' (KV state restored, no prefill)'}\n`);
          return true;
        }
        case '/del': case '/strip': {
          const r = arg ? store.find(arg) : undefined;
          if (!arg) out(`usage: ${cmd} ID\n`);
          else if (r) { if (cmd === '/del') store.delete(r.id); else store.strip(r); out(`${cmd === '/del' ? 'deleted' : 'stripped'} ${r.id}\n`); }
          return true;
        }
        case '/compact': await agent.compact(); return true;
        default: return false;
      }
    };
    rl.on('close', () => { closed = true; });
    rl.prompt();
    for await (const line of rl) {
      const text = line.trim();
      if (!text) { rl.prompt(); continue; }
      try {
        if (text.startsWith('/')) {
          if (!(await command(text))) out(`unknown command ${text.split(/\s+/)[0]} (/help)\n`);
        } else {
          busy = new AbortController();
          const r = await agent.send(text, busy.signal);
          out(`\n${dim(`[${r.stopped ?? `${r.steps} tool round(s)`} · ctx ${agent.session.tokens.length}/${eo.ctx}]`)}\n`);
        }
      } catch (e) {
        out(`\nerror: ${(e as Error).message}\n`);
      } finally {
        busy = null;
      }
      if (closed) break;
      rl.prompt();
    }
    closed = true;
    return 0;
  } finally {
    agent.dispose();
    engine.dispose();
  }
}

main().then((c) => { process.exitCode = c; }, (e) => {
  console.error(`q36-agent: ${(e as Error).message}`);
  process.exitCode = e instanceof CliError ? e.exitCode : 1;
});
