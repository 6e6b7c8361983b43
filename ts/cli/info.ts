/** `q36 --info -m FILE`: what a GGUF holds and whether QuarkStar can run it. */
import { readGguf, typeName, type GgufFile } from '../gguf/index.js';
import { describeShape, validateModel, type ModelShape } from '../model/shape.js';
import { shapeProblem } from '../engine/vulkan/limits.js';
import { MATVEC } from '../engine/vulkan/weights.js';

export function describeFile(f: GgufFile): string {
  const byType = new Map<string, { n: number; bytes: number }>();
  for (const t of f.tensors) {
    const k = typeName(t.type);
    const e = byType.get(k) ?? { n: 0, bytes: 0 };
    e.n++;
    e.bytes += t.nbytes;
    byType.set(k, e);
  }
  const types = [...byType].sort((a, b) => b[1].bytes - a[1].bytes)
    .map(([k, e]) => `  ${k.padEnd(8)} ${String(e.n).padStart(4)} tensors ${(e.bytes / 2 ** 20).toFixed(1).padStart(10)} MiB`);
  return [
    `file      ${f.path}`,
    `gguf      v${f.version}, ${f.metadata.size} metadata keys, ${f.tensors.length} tensors, alignment ${f.alignment}, ${(f.fileSize / 2 ** 30).toFixed(2)} GiB`,
    'types',
    ...types,
  ].join('\n');
}

/** Which backends run this file: the CPU runs every valid file; Vulkan within its kernels' limits (vulkan/limits.ts). */
function backends(f: GgufFile, s: ModelShape): string {
  const untyped = f.tensors.filter((t) => t.type !== undefined && !MATVEC[t.type] && t.name !== 'token_embd.weight' && /^(blk\.|output)/.test(t.name));
  const problem = shapeProblem(s) ?? (untyped.length ? `${untyped[0].name}: type ${typeName(untyped[0].type)} has no Vulkan decoder` : undefined);
  return problem ? `cpu (--cpu) only: Vulkan cannot run it: ${problem}` : 'cpu (--cpu) and vulkan (--vulkan, the default where a device is present)';
}

/** Prints the summary; returns the exit code (2 when the file is unusable). */
export function runInfo(path: string, out: (s: string) => void, err: (s: string) => void): number {
  let f: GgufFile;
  try {
    f = readGguf(path);
  } catch (e) {
    err((e as Error).message);
    return 2;
  }
  out(describeFile(f));
  try {
    const s = validateModel(f);
    out(`model\n${describeShape(s).split('\n').map((l) => `  ${l}`).join('\n')}`);
    out('status    OK: all required tensors present with supported types');
    out(`backends  ${backends(f, s)}`);
    return 0;
  } catch (e) {
    err((e as Error).message);
    return 2;
  }
}
