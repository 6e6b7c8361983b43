/**
 * q36 --mtp FILE|auto --prompt-ids IDS --dump-mtp-logits OUT.f32 (--cpu or --vulkan: the head on the trunk's backend): the MTP head's logits for
 * every position k of the ids (token x_k with the trunk's hidden state h_{k−1}, h_{−1} = 0), then
 * two chained draft steps after them (step 1: the trunk's greedy next token with h_{n−1}; step 2:
 * step 1's arg-max with the head's own hidden state) — n + 2 rows of the vocabulary's f32 logits,
 * the layout of ../shared/oracle/mtp's files.
 */
import * as fs from 'node:fs';
import type { Engine } from '../engine/types.js';
import { openHead } from '../engine/mtp/open-head.js';
import { firstMax } from '../engine/common.js';
import { CliError } from './load-tokenizer.js';


export async function runMtpDump(o: { engine: Engine; mtp: string; ids: number[]; out: string; err: (s: string) => void }): Promise<number> {
  const e = o.engine, N = e.shape.nEmbd, n = o.ids.length;
  if (n + 2 > e.options.ctx) throw new CliError(`--prompt-ids (${n} tokens) + 2 draft steps exceed --ctx ${e.options.ctx}`);
  let head;
  try { head = openHead(e, o.mtp); } catch (x) { throw new CliError((x as Error).message); }
  let fd: number;
  try { fd = fs.openSync(o.out, 'w'); } catch (x) { head.dispose(); throw new CliError(`cannot write --dump-mtp-logits "${o.out}": ${(x as NodeJS.ErrnoException).code}`); }
  const s = e.newSession();
  try {
    const H = new Float32Array(n * N);
    let last = new Float32Array(0);
    await s.eval(o.ids, { onHidden: (row, p) => H.set(row, p * N), onLogits: (row, p) => { if (p === n - 1) last = row.slice(); } });
    const write = (r: Float32Array) => fs.writeSync(fd, new Uint8Array(r.buffer, r.byteOffset, r.byteLength));
    // position k: x_k with h_{k−1}
    const inp = new Float32Array(n * N);
    inp.set(H.subarray(0, (n - 1) * N), N);
    for (let p = 0; p < n; p += head.maxRows) {
      const T = Math.min(head.maxRows, n - p);
      for (const r of (await head.run(o.ids.slice(p, p + T), inp.subarray(p * N, (p + T) * N), p)).logits) write(r);
    }
    const next = firstMax(last);
    const d1 = await head.run([next], H.subarray((n - 1) * N), n);
    const a1 = firstMax(d1.logits[0]);
    const d2 = await head.run([a1], d1.hidden, n + 1);
    write(d1.logits[0]);
    write(d2.logits[0]);
    o.err(`mtp: ${n} positions and 2 draft steps written to ${o.out} (the trunk's next token ${next}; drafts ${a1}, ${firstMax(d2.logits[0])})`);
    return 0;
  } finally {
    fs.closeSync(fd);
    head.dispose();
    s.dispose();
  }
}
