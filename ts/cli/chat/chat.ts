/**
 * Interactive multi-turn chat (`q36` without -p): readline with history, slash commands, reasoning
 * shown dim, a prefill progress line, a summary after each answer. The live session is kept across
 * turns, so each turn prefills only what is new. Ctrl+C stops a generation; twice at the prompt exits.
 */
import * as fs from 'node:fs';
import * as readline from 'node:readline';
import type { ParserEvent } from '../../chat/output-parser.js';
import { decodeAnswer } from '../../chat/answer.js';
import { AbortError } from '../../engine/common.js';
import type { Engine, EngineOptions, SampleOptions, Session } from '../../engine/types.js';
import { Conversation } from '../../chat/conversation.js';

export type ThinkMode = 'on' | 'off' | 'max';
import { safeForTerminal } from '../../terminal.js';
import { draftOptions, type DraftSpec } from '../../engine/draft/index.js';
import { CliError } from '../load-tokenizer.js';

export interface ChatOptions {
  open: (o: EngineOptions) => Promise<Engine>;
  engineOptions: EngineOptions;
  sampling: SampleOptions & { seed: number };
  maxTokens: number;
  think: ThinkMode;
  /** speculative decoding (--draft, --mtp) */
  draft?: DraftSpec;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream & { isTTY?: boolean };
}

const HELP = `commands:
  /help          this help
  /think         thinking on (default): reasoning first, shown dim
  /think-max     thinking on, with the answer budget raised to the free context
  /nothink       answer directly (the prompt closes the think block)
  /ctx N         reopen with a context of N tokens (the transcript is re-evaluated)
  /read FILE     send the file's content as your message (text after the name is appended)
  /quit          exit (also Ctrl+D, or Ctrl+C twice at the prompt)
Ctrl+C during an answer stops it; the chat continues.`;

export async function runChat(o: ChatOptions): Promise<number> {
  const tty = Boolean(o.output.isTTY);
  const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[22m` : s);
  // what the model wrote, made harmless for a terminal (our own styling is added after)
  const model = (s: string) => (tty ? safeForTerminal(s) : s);
  // reasoning: dim on a terminal, between <think> markers otherwise
  const thinkOpen = tty ? '' : '<think>', thinkClose = tty ? '' : '</think>';
  const write = (s: string) => o.output.write(s);
  let engineOpts = { ...o.engineOptions };
  let engine = await o.open(engineOpts);
  let session: Session = engine.newSession();
  session.seed(o.sampling.seed);
  let think: ThinkMode = o.think;
  // one drafter for the chat's session: its index of the context (or its MTP head's cache) grows
  // with the conversation
  let drafts: ReturnType<typeof draftOptions> | undefined;
  try { drafts = o.draft && draftOptions(o.draft, { engine, session }); } catch (e) { session.dispose(); engine.dispose(); throw new CliError((e as Error).message); }
  let busy: AbortController | null = null;
  const conv = new Conversation();
  let lastSigint = 0;

  const rl = readline.createInterface({ input: o.input, output: o.output, prompt: 'q36> ', historySize: 1000, terminal: tty });
  write(`QuarkStar chat — ${engine.backend}, ctx ${engineOpts.ctx}. /help for commands.\n`);

  rl.on('SIGINT', () => {
    if (busy) { busy.abort(); return; }
    const now = Date.now();
    if (now - lastSigint < 3000) { rl.close(); return; }
    lastSigint = now;
    write('\n(press Ctrl+C again to exit)\n');
    rl.prompt();
  });

  const turn = async (text: string) => {
    const tok = engine.tokenizer;
    const keep = conv.length;
    conv.addUser(text.trim());
    // the session holds the conversation's text so far: only the rest of the prompt is new
    const prompt = conv.render({ think: think !== 'off' });
    const held = conv.text;
    if (!prompt.startsWith(held)) {
      // (not expected: then the whole prompt is evaluated again)
      await session.rewind(0);
    }
    const ids = tok.encode(prompt.slice(session.tokens.length ? held.length : 0));
    const free = engineOpts.ctx - session.tokens.length - ids.length;
    if (free <= 0) { conv.truncate(keep); write(`context full (${session.tokens.length}/${engineOpts.ctx} tokens): use /ctx N with a larger N\n`); return; }
    const budget = think === 'max' ? free : Math.min(o.maxTokens, free);
    busy = new AbortController();
    const reused = session.tokens.length;
    // a rewind point before the message: Ctrl+C during its prefill takes it back out of the context
    if (reused > 0) session.checkpoint();
    const t0 = performance.now();
    let prefilled = false;
    let lastDraw = 0;
    try {
      await session.eval(ids, {
        signal: busy.signal,
        progress: (done, total) => {
          const now = performance.now();
          if (total > 256 && (now - lastDraw > 200 || done === total)) {
            lastDraw = now;
            const w = 24, f = Math.round((done / total) * w);
            process.stderr.write(`\rprefill [${'='.repeat(f)}${' '.repeat(w - f)}] ${done}/${total} ${(done / ((now - t0) / 1000)).toFixed(1)} tok/s${done === total ? '\n' : ''}`);
          }
        },
      });
      prefilled = true;
      const prefillMs = performance.now() - t0;
      let inReasoning = false;
      const show = (ev: ParserEvent) => {
        if (ev.type === 'reasoning') { if (!inReasoning) write(thinkOpen); inReasoning = true; write(dim(model(ev.text))); }
        else if (ev.type === 'content') { if (inReasoning) { write(`${thinkClose}\n\n`); inReasoning = false; } write(model(ev.text)); }
        else if (ev.type === 'tool_call_end') write(model(ev.call.raw));
      };
      // the live session holds the whole answer (decodeAnswer feeds every token but a stop token)
      const res = await decodeAnswer(session, tok, { maxTokens: budget, sampling: o.sampling, signal: busy.signal, startInReasoning: think !== 'off', onEvent: show, draft: drafts });
      conv.addAnswer({ prompt, raw: res.raw, think: think !== 'off', reasoning: res.parsed.reasoning });
      if (inReasoning) write(thinkClose);
      const n = res.tokens.length;
      const note = res.stop === 'abort' ? ' (interrupted)' : res.stop === 'length' ? ' (token budget reached)' : '';
      write(`\n${dim(`[prefill ${ids.length} new tokens (${reused} reused) ${(ids.length / (prefillMs / 1000)).toFixed(1)} tok/s · ` +
        `${n} tokens ${(n / (res.decodeMs / 1000)).toFixed(1)} tok/s · ctx ${session.tokens.length}/${engineOpts.ctx}]${note}`)}\n`);
    } catch (e) {
      if (!prefilled) {
        // the message never got an answer: the conversation and the context go back to before it
        conv.truncate(keep);
        try { await session.rewind(reused); } catch (e2) { write(`\nerror: ${(e2 as Error).message}\n`); }
      }
      if (e instanceof AbortError) write(`\n${dim(prefilled ? '[interrupted]' : `[interrupted during prefill: the message was not kept; ctx ${session.tokens.length}/${engineOpts.ctx}]`)}\n`);
      else write(`\nerror: ${(e as Error).message}\n`);
    } finally {
      busy = null;
    }
  };

  const command = async (line: string): Promise<boolean> => {
    const [cmd, ...rest] = line.split(/\s+/);
    const arg = rest.join(' ');
    switch (cmd) {
      case '/help': write(HELP + '\n'); return true;
      case '/quit': case '/exit': return false;
      case '/think': think = 'on'; write('thinking on\n'); return true;
      case '/think-max': think = 'max'; write('thinking on, budget: the free context\n'); return true;
      case '/nothink': think = 'off'; write('thinking off\n'); return true;
      case '/ctx': {
        const n = Number(arg);
        if (!Number.isInteger(n) || n < 16) { write('usage: /ctx N (an integer ≥ 16)\n'); return true; }
        if (n < session.tokens.length) { write(`the transcript already holds ${session.tokens.length} tokens: choose N ≥ that\n`); return true; }
        const tokens = session.tokens.slice();
        try {
          const next = await o.open({ ...engineOpts, ctx: n });
          session.dispose();
          engine.dispose();
          engine = next;
          engineOpts = { ...engineOpts, ctx: n };
          session = engine.newSession();
          session.seed(o.sampling.seed);
          drafts = o.draft && draftOptions(o.draft, { engine, session });
          if (tokens.length) await session.eval(tokens);
          write(`context is now ${n} tokens${tokens.length ? ` (transcript of ${tokens.length} tokens re-evaluated)` : ''}\n`);
        } catch (e) {
          write(`cannot set ctx ${n}: ${(e as Error).message}\n`);
        }
        return true;
      }
      case '/read': {
        const [file, ...q] = rest;
        if (!file) { write('usage: /read FILE [question]\n'); return true; }
        let body: string;
        try { body = fs.readFileSync(file, 'utf8'); } catch (e) { write(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code}\n`); return true; }
        await turn(q.length ? `${body}\n\n${q.join(' ')}` : body);
        return true;
      }
      default: write(`unknown command ${cmd}: /help lists them\n`); return true;
    }
  };

  rl.prompt();
  const done = new Promise<void>((resolve) => rl.on('close', () => resolve()));
  let queue = Promise.resolve();
  rl.on('line', (line) => {
    queue = queue.then(async () => {
      const text = line.trim();
      if (!text) { rl.prompt(); return; }
      if (text.startsWith('/')) {
        if (!(await command(text))) { rl.close(); return; }
      } else {
        await turn(text);
      }
      rl.prompt();
    });
  });
  await done;
  await queue;
  write('\n');
  session.dispose();
  engine.dispose();
  return 0;
}
