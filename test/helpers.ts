import * as fs from 'node:fs';
import fsModule from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { expect, vi } from 'vitest';
import type { Engine, Session } from '../ts/engine/types.js';

export const FIXTURES = path.resolve(__dirname, '..', 'fixtures');
export const fixture = (...p: string[]) => path.join(FIXTURES, ...p);

export function tmpDir(prefix = 'q36-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export const ORACLE_GGUFS = [
  'tinyA/tinyA-bf16.gguf', 'tinyA/tinyA-q8_0.gguf', 'tinyA/tinyA-q2.gguf', 'tinyA/tinyA-q2q4.gguf',
  'tinyR/tinyR-bf16.gguf', 'tinyR/tinyR-q2.gguf',
];

/** One oracle case from a reference.json (the HF float64 logits file holds its rows). */
export interface OracleCase { prompt_ids: number[]; greedy_ids: number[]; logits_offset_bytes: number; vocab: number }

/** Evaluates a case's prompt + greedy tokens on a fresh session; returns max |Δlogit| per position. */
export async function oracleLogitErrors(engine: { newSession(): import('../ts/engine/types.js').Session }, c: OracleCase, logits: Float32Array): Promise<number[]> {
  const s = engine.newSession();
  const errs: number[] = [];
  try {
    await s.eval([...c.prompt_ids, ...c.greedy_ids], {
      onLogits: (row, p) => {
        const off = c.logits_offset_bytes / 4 + p * c.vocab;
        let m = 0;
        for (let v = 0; v < c.vocab; v++) m = Math.max(m, Math.abs(row[v] - logits[off + v]));
        errs.push(m);
      },
    });
  } finally {
    s.dispose();
  }
  return errs;
}

/** Runs q36 in a pseudo-terminal with a script of keystrokes and expectations (test/tools/pty_drive.py). */
export function driveQ36(steps: object[], args: string[], timeoutMs = 120_000, tool = 'q36') {
  const root = path.resolve(__dirname, '..');
  const f = path.join(tmpDir(), 'steps.json');
  fs.writeFileSync(f, JSON.stringify(steps));
  const r = spawnSync('python3', [path.join(root, 'test/tools/pty_drive.py'), f, '--', process.execPath, path.join(root, `dist/ts/cli/${tool}.js`), ...args], { encoding: 'utf8', timeout: timeoutMs });
  if (r.status !== 0) throw new Error(`pty driver failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { ok: boolean; failed_step: number | null; transcript: string; exit: number | null };
}

/**
 * Runs fn while fs.readSync and fs.read fail with EIO (as a failing disk gives) after `okReads` more reads;
 * the real readSync is back afterwards. (ESM importers see the patch through syncBuiltinESMExports.)
 */
export async function withFailingReads<T>(okReads: number, fn: () => Promise<T>): Promise<T> {
  let calls = 0;
  const eio = () => Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
  const real = fs.readSync, realAsync = fs.read;
  const spy = vi.spyOn(fsModule, 'readSync').mockImplementation(((...a: Parameters<typeof fs.readSync>) => {
    if (++calls > okReads) throw eio();
    return (real as (...x: unknown[]) => number)(...a);
  }) as typeof fs.readSync);
  // the callback form too (the Vulkan engine's expert reads run on libuv's worker threads)
  const spyAsync = vi.spyOn(fsModule, 'read').mockImplementation(((...a: unknown[]) => {
    const cb = a[a.length - 1] as (err: Error | null, n?: number) => void;
    if (++calls > okReads) { process.nextTick(() => cb(eio())); return; }
    (realAsync as (...x: unknown[]) => void)(...a);
  }) as typeof fs.read);
  syncBuiltinESMExports();
  try {
    return await fn();
  } finally {
    spy.mockRestore();
    spyAsync.mockRestore();
    syncBuiltinESMExports();
  }
}

/**
 * A session's payload moved between two engines of one model (a streaming and a resident one):
 * `toks` evaluated on each, each saved into a fresh session of the other, then `more` decoded on
 * all four. Returns their logits rows, the unmoved `a` session's first; the caller compares.
 */
export async function movedPayloadRows(a: Engine, b: Engine, toks: number[], more: number[]): Promise<Float32Array[][]> {
  const cont = async (s: Session) => { const out: Float32Array[] = []; for (const t of more) { await s.eval([t]); out.push(s.logits().slice()); } return out; };
  const sa = a.newSession(), sb = b.newSession(), sc = b.newSession(), sd = a.newSession();
  try {
    await sa.eval(toks);
    await sc.eval(toks);
    sb.loadPayload(sa.savePayload()); // a → b
    sd.loadPayload(sc.savePayload()); // b → a
    return [await cont(sa), await cont(sb), await cont(sc), await cont(sd)];
  } finally {
    [sa, sb, sc, sd].forEach((s) => s.dispose());
  }
}

/**
 * A read error on the model file in the middle of a streaming engine's eval (reads fail after
 * `okReads` more): the eval must fail naming the file and leave the session empty, and the next
 * eval must give the logits `ref` (a resident engine) gives. Returns both sessions, for more.
 */
export async function readErrorRecovers(e: Engine, ref: Engine, file: RegExp, okReads: number): Promise<{ s: Session; r: Session }> {
  const toks = [5, 17, 300, 42, 9, 100, 200, 300];
  const s = e.newSession();
  await s.eval(toks.slice(0, 4));
  await withFailingReads(okReads, () => expect(s.eval(toks.slice(4))).rejects.toThrow(new RegExp(`${file.source}: EIO: i/o error`)));
  expect(s.tokens.length).toBe(0);
  await s.eval(toks);
  const r = ref.newSession();
  await r.eval(toks);
  expect(Buffer.from(s.logits().buffer).equals(Buffer.from(r.logits().buffer))).toBe(true);
  return { s, r };
}
