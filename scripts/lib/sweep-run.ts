/**
 * One geometry of the sweep: writes the model, opens it on the CPU and on Vulkan with the same KV
 * types, and compares them (backend-compare.ts) — or, for a geometry past the kernels' limits,
 * checks that Vulkan refuses it at load by name.
 */
import * as path from 'node:path';
import * as fs from 'node:fs';
import { openEngine, type KvType } from '../../ts/engine/index.js';
import { makeModel } from '../../ts/model/synthetic-model.js';
import { compareBackends, type CompareResult } from './backend-compare.js';
import type { SweepGeometry } from './geometries.js';

export interface SweepOutcome { name: string; refused?: string; results: CompareResult[] }

export async function runGeometry(sg: SweepGeometry, o: { dir: string; prefills: number[]; decode: number; kv?: { k: KvType; v: KvType } }): Promise<SweepOutcome> {
  const file = path.join(o.dir, `${sg.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.gguf`);
  makeModel({ out: file, geometry: sg.geometry, recipe: sg.recipe, seed: 11 });
  const kvTypes = o.kv ?? { k: 'f16', v: 'f16' };
  const ctx = Math.max(...o.prefills) + o.decode + 16;
  try {
    let vk;
    try {
      vk = await openEngine({ model: file, backend: 'vulkan', ctx, kvTypes });
    } catch (e) {
      if (sg.refuse) return { name: sg.name, refused: (e as Error).message, results: [] };
      throw e;
    }
    if (sg.refuse) { vk.dispose(); throw new Error(`${sg.name}: the Vulkan engine loaded a geometry it should refuse`); }
    const cpu = await openEngine({ model: file, backend: 'cpu', ctx, kvTypes });
    try {
      return { name: sg.name, results: await compareBackends(cpu, vk, { prefills: o.prefills, decode: o.decode, vocab: sg.geometry.addedTokensStart }) };
    } finally {
      cpu.dispose(); vk.dispose();
    }
  } finally {
    fs.rmSync(file, { force: true });
  }
}
