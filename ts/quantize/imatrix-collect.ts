/**
 * q36-imatrix's work: the calibration text tokenized without special-token parsing (as
 * llama-imatrix reads -f), cut into whole chunks of `chunkSize` tokens, each evaluated from an
 * empty session on the CPU reference engine with activation statistics on.
 */
import { ActivationStats } from '../engine/cpu/activation-stats.js';
import { CpuEngine } from '../engine/cpu/cpu-engine.js';
import type { Imatrix } from './imatrix-file.js';

export interface CollectOptions {
  engine: CpuEngine;
  text: string;
  chunkSize: number;
  /** at most this many chunks (default: every whole chunk of the text) */
  maxChunks?: number;
  /** recorded in imatrix.datasets */
  dataset: string;
  onChunk?: (done: number, total: number) => void;
}

export async function collectImatrix(o: CollectOptions): Promise<Imatrix> {
  const tokens = o.engine.tokenizer.encode(o.text, { parseSpecial: false });
  const available = Math.floor(tokens.length / o.chunkSize);
  if (available < 1) throw new Error(`the calibration text has ${tokens.length} tokens: fewer than one chunk of ${o.chunkSize}`);
  const n = Math.min(available, o.maxChunks ?? available);
  const stats = new ActivationStats(o.engine);
  try {
    for (let c = 0; c < n; c++) {
      const s = o.engine.newSession();
      try {
        await s.eval(tokens.slice(c * o.chunkSize, (c + 1) * o.chunkSize));
      } finally {
        s.dispose();
      }
      o.onChunk?.(c + 1, n);
    }
    return { entries: stats.read(), datasets: [o.dataset], chunkCount: n, chunkSize: o.chunkSize };
  } finally {
    stats.stop();
  }
}
