/**
 * q36 generation modes:
 *   test vectors:  q36 --cpu -m MODEL --prompt-ids "1,2,3" | @file -n N --temp 0 --dump-logits OUT.f32
 *   one-shot chat: q36 --cpu -m MODEL -p "..." [--nothink]
 * Both share --dump-logprobs FILE --logprobs-top-k K.
 */
import * as fs from 'node:fs';
import { renderChat } from '../chat/render.js';
import { decodeAnswer } from '../chat/answer.js';
import { openEngine, type Engine } from '../engine/index.js';
import { CliError } from './load-tokenizer.js';
import { draftOptions, type DraftSpec } from '../engine/draft/index.js';
import { formatSize } from './size.js';
import type { SampleOptions } from '../engine/types.js';

export interface GenerateCmd {
  engine: Engine;
  promptIds?: number[];
  chatPrompt?: string;
  nothink: boolean;
  maxTokens: number;
  sampling: SampleOptions & { seed: number };
  dumpLogits?: string;
  dumpLogprobs?: string;
  logprobsTopK: number;
  /** speculative decoding (--draft): the drafter and the most drafts a step */
  draft?: DraftSpec;
  out: (s: string) => void;
  err: (s: string) => void;
  signal?: AbortSignal;
}

/** "1,2,3", "1 2 3", "[1,2,3]" or "@file" holding any of those. */
export function parsePromptIds(spec: string, vocab: number): number[] {
  let text = spec;
  if (spec.startsWith('@')) {
    try { text = fs.readFileSync(spec.slice(1), 'utf8'); } catch (e) { throw new CliError(`cannot read --prompt-ids file "${spec.slice(1)}": ${(e as NodeJS.ErrnoException).code}`); }
  }
  const parts = text.replace(/[[\]]/g, ' ').split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) throw new CliError('--prompt-ids is empty');
  return parts.map((p) => {
    const n = Number(p);
    if (!Number.isInteger(n) || n < 0 || n >= vocab) throw new CliError(`--prompt-ids: "${p}" is not a token id in 0..${vocab - 1}`);
    return n;
  });
}

export async function runGenerate(c: GenerateCmd): Promise<number> {
  const e = c.engine, tok = e.tokenizer;
  let prompt: number[];
  if (c.promptIds) prompt = c.promptIds;
  else prompt = tok.encode(renderChat([{ role: 'user', content: c.chatPrompt ?? '' }], { enableThinking: c.nothink ? false : undefined }));
  if (prompt.length + c.maxTokens > e.options.ctx) throw new CliError(`prompt (${prompt.length} tokens) + -n ${c.maxTokens} exceeds --ctx ${e.options.ctx}`);

  const s = e.newSession();
  s.seed(c.sampling.seed);
  // the drafter follows the session from its prompt on (an MTP head fills its cache with it)
  let draft;
  try { draft = c.draft && draftOptions(c.draft, { engine: e, session: s }); } catch (x) { s.dispose(); throw new CliError((x as Error).message); }
  let logitsFd: number | undefined;
  if (c.dumpLogits) {
    try { logitsFd = fs.openSync(c.dumpLogits, 'w'); } catch (e2) { throw new CliError(`cannot write --dump-logits "${c.dumpLogits}": ${(e2 as NodeJS.ErrnoException).code}`); }
  }
  const writeRow = logitsFd === undefined ? undefined : (row: Float32Array) => { fs.writeSync(logitsFd!, new Uint8Array(row.buffer, row.byteOffset, row.byteLength)); };
  const drafted = { steps: 0, proposed: 0, accepted: 0 };
  const steps: { token: number; piece: string; logprob: number; top: { id: number; piece: string; logprob: number }[] }[] = [];
  const piece = (id: number) => tok.piece(id);
  try {
    const t0 = performance.now();
    let lastReport = 0;
    await s.eval(prompt, {
      onLogits: writeRow,
      signal: c.signal,
      progress: (done, total) => {
        const now = performance.now();
        if (!c.promptIds && now - lastReport > 1000 && done < total) {
          lastReport = now;
          c.err(`prefill ${done}/${total} tokens, ${(done / ((now - t0) / 1000)).toFixed(1)} tok/s`);
        }
      },
    });
    const prefillMs = performance.now() - t0;
    // the text as it comes (raw: not parsed), or with --prompt-ids the token ids only and no stop
    // tokens, every token fed (a logits row each)
    const res = await decodeAnswer(s, tok, {
      maxTokens: c.maxTokens,
      sampling: c.sampling,
      raw: true,
      stopIds: c.promptIds ? new Set() : tok.stopIds,
      feed: c.promptIds ? 'all' : 'not-last',
      onLogits: writeRow,
      signal: c.signal,
      draft: draft && { ...draft, onStep: (p, a) => { drafted.steps++; drafted.proposed += p; drafted.accepted += a; } },
      logprobs: c.dumpLogprobs ? c.logprobsTopK : undefined,
      onTokenLogprobs: (chosen, top) => steps.push({ token: chosen.id, piece: piece(chosen.id), logprob: chosen.logprob, top: top.map((t) => ({ id: t.id, piece: piece(t.id), logprob: t.logprob })) }),
      onEvent: (ev) => { if (!c.promptIds && ev.type === 'content') c.out(ev.text); },
    });
    if (c.promptIds) c.out(`generated: ${res.tokens.join(' ')}\n`);
    else c.out('\n');
    if (c.dumpLogprobs) {
      try { fs.writeFileSync(c.dumpLogprobs, JSON.stringify({ prompt_tokens: prompt.length, top_k: c.logprobsTopK, steps }, null, 1) + '\n'); } catch (e2) { throw new CliError(`cannot write --dump-logprobs "${c.dumpLogprobs}": ${(e2 as NodeJS.ErrnoException).code}`); }
    }
    const n = res.tokens.length;
    c.err(`prompt ${prompt.length} tokens in ${(prefillMs / 1000).toFixed(2)} s (${(prompt.length / (prefillMs / 1000)).toFixed(1)} tok/s); ` +
      `generated ${n} tokens in ${(res.decodeMs / 1000).toFixed(2)} s (${(n / (res.decodeMs / 1000)).toFixed(2)} tok/s), stop: ${res.stop}` +
      (draft ? `; ${draft.drafter.name} drafts: ${drafted.steps} draft steps, ${drafted.accepted} of ${drafted.proposed} drafts accepted` : ''));
    return 0;
  } finally {
    if (logitsFd !== undefined) fs.closeSync(logitsFd);
    s.dispose();
  }
}

/**
 * Opens the engine for a command; on a terminal (stderr a TTY) it says what it loads and how long it
 * took, so a multi-second load is not a blank screen; in a pipe it stays quiet.
 */
export async function openEngineForCli(o: Parameters<typeof openEngine>[0], tty = Boolean(process.stderr.isTTY)): Promise<Engine> {
  const t0 = performance.now();
  if (tty) {
    let size = '';
    try { size = ` (${formatSize(fs.statSync(o.model).size)})`; } catch { /* the open below names the problem */ }
    process.stderr.write(`loading ${o.model}${size} on the ${o.backend === 'cpu' ? 'CPU' : 'GPU'}…`);
  }
  try {
    const e = await openEngine(o);
    if (tty) process.stderr.write(` ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    return e;
  } catch (e) {
    if (tty) process.stderr.write('\n');
    throw new CliError((e as Error).message);
  }
}
