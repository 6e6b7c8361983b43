/**
 * Where the model lives when no -m is given, as ollama and llama.cpp users expect one place: the
 * store (Q36_MODELS, default ~/.q36/models), which `q36 download` fills and `q36 models` lists.
 * Q36_MODEL names a file outright; the QuarkStar layout (./gguf/ under the current directory) still
 * wins where it holds the default file, so existing set-ups keep working.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { EnvSettings } from './env.js';

/** The published files by download name (q36 download NAME). */
export const MODELS: Record<string, string> = {
  'q2-imatrix': 'Qwen3.6-35B-A3B-AntirezExperts-IQ2XXS-gateup-Q2K-down-Q8rest.gguf',
  'q2-q4-imatrix': 'Qwen3.6-35B-A3B-Layers34-39Q4KExperts-OtherExpertLayersIQ2XXSGateUp-Q2KDown-Q8Rest-imatrix.gguf',
  mtp: 'Qwen3.6-35B-A3B-MTP.gguf',
};

/** The default model's file name (the q2 recipe). */
export const DEFAULT_FILE = MODELS['q2-imatrix'];

export interface Place { cwd: string; home: string }
const here = (): Place => ({ cwd: process.cwd(), home: os.homedir() });

export function storeDir(env: EnvSettings, at: Place = here()): string {
  return path.resolve(at.cwd, env.modelStore ?? path.join(at.home, '.q36', 'models'));
}

/** The file a command loads without -m: Q36_MODEL, else ./gguf/DEFAULT_FILE where it exists, else the store's. */
export function defaultModel(env: EnvSettings, at: Place = here()): string {
  if (env.modelFile) return env.modelFile;
  const local = path.join(at.cwd, 'gguf', DEFAULT_FILE);
  if (fs.existsSync(local)) return local;
  return path.join(storeDir(env, at), DEFAULT_FILE);
}

/** What to tell a user whose default model is missing. */
export function missingModelHint(file: string, env: EnvSettings, at: Place = here()): string | undefined {
  if (env.modelFile && path.resolve(at.cwd, file) === path.resolve(at.cwd, env.modelFile)) return 'set by Q36_MODEL';
  if (path.basename(file) !== DEFAULT_FILE) return undefined;
  return `pass -m FILE, set Q36_MODEL, or fetch it into the model store ${storeDir(env, at)} with: q36 download q2-imatrix`;
}

export interface StoredModel { file: string; bytes: number; name?: string; partial: boolean }

/** The .gguf files (and unfinished downloads) in the store and in ./gguf, largest first within each. */
export function listModels(env: EnvSettings, at: Place = here()): { dir: string; models: StoredModel[] }[] {
  const byFile = new Map(Object.entries(MODELS).map(([k, v]) => [v, k]));
  const dirs = [...new Set([storeDir(env, at), path.join(at.cwd, 'gguf')])];
  return dirs.map((dir) => {
    let names: string[] = [];
    try { names = fs.readdirSync(dir); } catch { /* no such folder */ }
    const models = names.filter((n) => n.endsWith('.gguf') || n.endsWith('.gguf.part')).flatMap((n) => {
      let st: fs.Stats;
      try { st = fs.statSync(path.join(dir, n)); } catch { return []; }
      if (!st.isFile()) return [];
      const partial = n.endsWith('.part'), base = partial ? n.slice(0, -5) : n;
      return [{ file: path.join(dir, n), bytes: st.size, name: byFile.get(base), partial }];
    }).sort((a, b) => b.bytes - a.bytes);
    return { dir, models };
  });
}
