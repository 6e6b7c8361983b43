/**
 * The MTP (nextn) draft head's tensors, in llama.cpp's qwen35moe layout: one block after the trunk
 * (`blk.L.` with L = block_count − nextn_predict_layers), read from an MTP-only GGUF (`q36 download
 * mtp`: the head's block plus the embedding, output norm and head it shares) or from a main file
 * that carries them (`--mtp auto`). The block is a gated full-attention layer with its MoE, so the
 * file is presented to the engines as a one-layer attention model (`blk.0.…`, the head's norm and
 * output as `output_norm` / `output`) beside its input projection (`nextn.eh_proj`, `enorm`,
 * `hnorm`). Every tensor is checked by name and shape against the trunk it drafts for.
 */
import { GgufError, metaNumber, readGguf, typeInfo, typeName, type GgufFile, type TensorInfo } from '../../gguf/index.js';
import { readModelShape, requiredTensors, type ModelShape } from '../../model/shape.js';

export interface MtpModel {
  /** the head's tensors under a one-layer model's names (the file's own path and offsets) */
  file: GgufFile;
  /** the trunk's shape with one attention layer: the head's block */
  shape: ModelShape;
  /** the input projection (2·nEmbd → nEmbd) and its two norms */
  ehProj: TensorInfo;
  enorm: TensorInfo;
  hnorm: TensorInfo;
}

const FLOAT = new Set([0, 1, 30]); // F32, F16, BF16

/** The dimensions the head must share with the trunk. */
const SAME = ['nEmbd', 'nVocab', 'nHead', 'nHeadKv', 'headDim', 'nRot', 'nExpert', 'nExpertUsed', 'nFfExp', 'nFfShexp'] as const;

export function openMtp(path: string, trunk: ModelShape): MtpModel {
  const f = readGguf(path);
  const fail = (m: string): never => { throw new GgufError(path, `MTP head: ${m}`); };
  let s: ModelShape;
  try { s = readModelShape(f); } catch (e) { return fail((e as Error).message); }
  const nNextn = metaNumber(f, 'qwen35moe.nextn_predict_layers', 0);
  if (nNextn < 1) fail('qwen35moe.nextn_predict_layers is 0 or missing: the file holds no MTP block');
  for (const k of SAME) if (s[k] !== trunk[k]) fail(`${k} ${s[k]} differs from the model's ${trunk[k]}: an MTP file of another model`);
  if (s.nLayer !== trunk.nLayer) fail(`it follows a trunk of ${s.nLayer} layers, the model has ${trunk.nLayer}`);
  const L = s.nLayer;
  const shape: ModelShape = { ...trunk, nLayer: 1, nNextn: 0, recurrent: [false] };
  const has = (n: string) => f.tensorByName.get(n);
  // the one-layer model's names → the file's tensors (the head's own shared ones where present)
  const names = new Map<string, string>();
  for (const r of requiredTensors(shape)) {
    if (r.name.startsWith('blk.0.')) names.set(r.name, `blk.${L}.${r.name.slice(6)}`);
  }
  names.set('token_embd.weight', has(`blk.${L}.nextn.embed_tokens.weight`) ? `blk.${L}.nextn.embed_tokens.weight` : 'token_embd.weight');
  names.set('output_norm.weight', has(`blk.${L}.nextn.shared_head_norm.weight`) ? `blk.${L}.nextn.shared_head_norm.weight` : 'output_norm.weight');
  names.set('output.weight', has(`blk.${L}.nextn.shared_head_head.weight`) ? `blk.${L}.nextn.shared_head_head.weight` : 'output.weight');
  const problems: string[] = [];
  const check = (real: string, shapes: number[][], float: boolean): TensorInfo | undefined => {
    const t = has(real);
    if (!t) { problems.push(`${real}: missing`); return undefined; }
    if (!shapes.some((sh) => sh.length === t.shape.length && sh.every((v, i) => v === t.shape[i]))) problems.push(`${real}: expected [${shapes[0].join(',')}], found [${t.shape.join(',')}]`);
    else if (!typeInfo(t.type)?.supported) problems.push(`${real}: type ${typeName(t.type)} is not supported`);
    else if (float && !FLOAT.has(t.type)) problems.push(`${real}: type ${typeName(t.type)} not allowed here (F32, F16 or BF16)`);
    return t;
  };
  const byName = new Map<string, TensorInfo>();
  for (const r of requiredTensors(shape)) {
    const real = names.get(r.name)!;
    const t = check(real, r.shapes, r.types === 'float');
    if (t) byName.set(r.name, t);
  }
  const ehProj = check(`blk.${L}.nextn.eh_proj.weight`, [[2 * trunk.nEmbd, trunk.nEmbd]], false);
  const enorm = check(`blk.${L}.nextn.enorm.weight`, [[trunk.nEmbd]], true);
  const hnorm = check(`blk.${L}.nextn.hnorm.weight`, [[trunk.nEmbd]], true);
  if (problems.length) fail(problems.slice(0, 12).join('; ') + (problems.length > 12 ? `; … ${problems.length - 12} more` : ''));
  return { file: { ...f, tensors: [...byName.values()], tensorByName: byName }, shape, ehProj: ehProj!, enorm: enorm!, hnorm: hnorm! };
}
