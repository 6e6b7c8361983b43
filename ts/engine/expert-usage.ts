/**
 * Expert-use counts (the SSD-streaming warm start): how often each (layer, expert) was needed —
 * once per forward call that routed to it (a prefill chunk counts each of its experts once, a
 * decode step its top-k) — summed over runs in one JSON file per model (its fingerprint inside, so another model's file is
 * never used). The streaming cache preloads the most used experts at start; the counts grow with
 * every run that saves them. The CLI chooses the file (~/.q36/expert-usage/, docs/cpu-engine.md).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../safe-file.js';

export interface ExpertUsageFile {
  format: 'q36-expert-usage';
  version: 1;
  /** the model's fingerprint (hex) */
  model: string;
  nLayer: number;
  nExpert: number;
  /** nLayer × nExpert counts, layer-major */
  counts: number[];
}

/** The counts in `file` for this model, or why they cannot be used (missing file: empty counts). */
export function readUsage(file: string, model: string, nLayer: number, nExpert: number): { counts: Float64Array; problem?: string } {
  const empty = new Float64Array(nLayer * nExpert);
  let text: string;
  try { text = fs.readFileSync(file, 'utf8'); } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? { counts: empty } : { counts: empty, problem: `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` };
  }
  let j: Partial<ExpertUsageFile>;
  try { j = JSON.parse(text); } catch { return { counts: empty, problem: `${file} is not JSON` }; }
  if (j.format !== 'q36-expert-usage' || j.version !== 1) return { counts: empty, problem: `${file} is not a q36 expert-usage file (version 1)` };
  if (j.model !== model) return { counts: empty, problem: `${file} belongs to another model` };
  if (j.nLayer !== nLayer || j.nExpert !== nExpert || !Array.isArray(j.counts) || j.counts.length !== nLayer * nExpert || j.counts.some((c) => !(Number.isFinite(c) && c >= 0))) {
    return { counts: empty, problem: `${file} has counts of the wrong shape` };
  }
  return { counts: Float64Array.from(j.counts) };
}

/** Adds `counts` to those already in the file (other runs') and writes it atomically. */
export function addUsage(file: string, model: string, nLayer: number, nExpert: number, counts: ArrayLike<number>): void {
  const old = readUsage(file, model, nLayer, nExpert).counts;
  const sum = Array.from(old, (c, i) => c + counts[i]);
  const body: ExpertUsageFile = { format: 'q36-expert-usage', version: 1, model, nLayer, nExpert, counts: sum };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomic(file, JSON.stringify(body));
}

/** Keys (layer · nExpert + expert) with a count, most used first (ties: the lower key). */
export function hotlist(counts: Float64Array): number[] {
  return Array.from(counts.keys()).filter((k) => counts[k] > 0).sort((a, b) => counts[b] - counts[a] || a - b);
}
