/**
 * llama.cpp's GGUF importance-matrix format (llama-imatrix writes it, llama-quantize reads it):
 * per weight `<name>.in_sum2` (ne0 × n_experts f32: Σ over calibration tokens of the squared
 * input activation per column; experts count only the tokens routed to them) and
 * `<name>.counts` (1 × n_experts f32: those token counts), plus `imatrix.datasets`,
 * `imatrix.chunk_count`, `imatrix.chunk_size`. Files move between the two tools both ways.
 */
import * as fs from 'node:fs';
import { GgmlType, GgufError, GgufValueType, kv, readGguf, readTensorBytes, writeGguf, type GgufValue } from '../gguf/index.js';

// one weight's statistics: declared where the engine collects them (below this file's tools)
import type { ImatrixEntry } from '../engine/cpu/activation-stats.js';
export type { ImatrixEntry };

export interface Imatrix {
  entries: Map<string, ImatrixEntry>;
  datasets: string[];
  chunkCount: number;
  chunkSize: number;
}

const SUMS = '.in_sum2';
const COUNTS = '.counts';

export function readImatrix(path: string): Imatrix {
  const g = readGguf(path);
  const fail = (m: string): never => { throw new GgufError(path, m); };
  const type = g.metadata.get('general.type');
  if (!type || type.value !== 'imatrix') fail('not an importance matrix (general.type is not "imatrix"); legacy .dat files are not supported, convert them with llama-imatrix --output-format gguf');
  const ds = g.metadata.get('imatrix.datasets');
  const datasets = ds && ds.type === GgufValueType.ARRAY && ds.elemType === GgufValueType.STRING ? (ds.value as string[]) : [];
  const num = (k: string) => { const v = g.metadata.get(k); return v && typeof v.value === 'number' ? v.value : 0; };
  const fd = fs.openSync(path, 'r');
  const entries = new Map<string, ImatrixEntry>();
  try {
    const read = (name: string) => {
      const t = g.tensorByName.get(name)!;
      if (t.type !== GgmlType.F32) fail(`${name} is not F32`);
      const b = new Uint8Array(t.nbytes);
      readTensorBytes(fd, t, b);
      return { t, v: new Float32Array(b.buffer, 0, t.nbytes / 4) };
    };
    for (const t of g.tensors) {
      if (!t.name.endsWith(SUMS)) {
        if (!t.name.endsWith(COUNTS)) fail(`unexpected tensor "${t.name}" (an imatrix holds only ${SUMS} and ${COUNTS})`);
        if (!g.tensorByName.has(t.name.slice(0, -COUNTS.length) + SUMS)) fail(`"${t.name}" has no matching ${SUMS}`);
        continue;
      }
      const name = t.name.slice(0, -SUMS.length);
      if (!g.tensorByName.has(name + COUNTS)) fail(`"${t.name}" has no matching ${COUNTS}`);
      const s = read(t.name), c = read(name + COUNTS);
      const nExp = c.v.length;
      if (nExp < 1 || s.v.length % nExp !== 0 || (s.t.shape[1] ?? 1) !== nExp) fail(`${name}: ${s.v.length} sums do not split over ${nExp} counts`);
      for (const x of c.v) if (!(x >= 0) || !Number.isFinite(x)) fail(`${name}: count ${x} is not a non-negative number`);
      for (const x of s.v) if (!(x >= 0) || !Number.isFinite(x)) fail(`${name}: sum of squares ${x} is not a non-negative number`);
      entries.set(name, { ne0: s.v.length / nExp, sums: s.v, counts: c.v });
    }
  } finally {
    fs.closeSync(fd);
  }
  return { entries, datasets, chunkCount: num('imatrix.chunk_count'), chunkSize: num('imatrix.chunk_size') };
}

/**
 * The importance weights llama-quantize passes to the quantizer: sums / count per expert (an
 * expert that saw no token gets weights of 1), float division as in its loader.
 */
export function importanceWeights(e: ImatrixEntry): Float32Array {
  const w = new Float32Array(e.sums.length);
  for (let j = 0; j < e.counts.length; j++) {
    const c = e.counts[j];
    for (let i = 0; i < e.ne0; i++) w[j * e.ne0 + i] = c > 0 ? Math.fround(e.sums[j * e.ne0 + i] / c) : 1;
  }
  return w;
}

export function writeImatrix(path: string, m: Imatrix): void {
  const names = [...m.entries.keys()].sort();
  const metadata: [string, GgufValue][] = [
    ['general.type', kv.str('imatrix')],
    ['imatrix.datasets', kv.strs(m.datasets)],
    ['imatrix.chunk_count', kv.u32(m.chunkCount)],
    ['imatrix.chunk_size', kv.u32(m.chunkSize)],
  ];
  const tensors = names.flatMap((n) => {
    const e = m.entries.get(n)!;
    const ne = e.counts.length;
    return [
      { name: n + SUMS, shape: ne > 1 ? [e.ne0, ne] : [e.ne0], type: GgmlType.F32 },
      { name: n + COUNTS, shape: ne > 1 ? [1, ne] : [1], type: GgmlType.F32 },
    ];
  });
  writeGguf(path, {
    metadata, tensors,
    fill: (t) => {
      const isSums = t.name.endsWith(SUMS);
      const e = m.entries.get(t.name.slice(0, -(isSums ? SUMS : COUNTS).length))!;
      const v = isSums ? e.sums : e.counts;
      return [new Uint8Array(v.buffer, v.byteOffset, v.byteLength)];
    },
  });
}
