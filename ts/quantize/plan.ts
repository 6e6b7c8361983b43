/**
 * Which type every tensor gets: the recipes of the QuarkStar README (q2: routed gate/up IQ2_XXS,
 * routed down Q2_K, every other 2-D weight Q8_0; q2q4: the same with the chosen layers' experts
 * Q4_K; q8_0), `--tensor-type PATTERN=TYPE` overrides (a regular expression searched in the
 * tensor name, first match wins, as llama-quantize), and llama-quantize's rules for what is never
 * quantized (1-D tensors, norms, the router, the conv kernel). Every problem is found here, before
 * a byte is written.
 */
import { GgmlType, metaNumber, metaString, typeInfo, typeName, type GgufFile, type TensorInfo } from '../gguf/index.js';
import { needsImatrix, INPUT_TYPES, OUTPUT_TYPES, usesImatrix } from './rows.js';
import type { Imatrix } from './imatrix-file.js';

export type Recipe = 'q2' | 'q2q4' | 'q8_0';
export const RECIPES: readonly Recipe[] = ['q2', 'q2q4', 'q8_0'];

export interface TypeOverride { pattern: string; type: GgmlType }

export interface PlanOptions {
  recipe: Recipe;
  overrides?: TypeOverride[];
  /** q2q4: the layers whose routed experts are Q4_K, inclusive (default: the last 15%, 34–39 of 40) */
  q4Layers?: [number, number];
  imatrix?: Imatrix;
}

export interface TensorPlan {
  src: TensorInfo;
  /** output shape: trailing dimensions of 1 dropped, as ggml writes them */
  shape: number[];
  type: GgmlType;
  /** bytes copied unchanged (same type, or a tensor that is never quantized) */
  copy: boolean;
  /** importance weights source, when the output type uses one */
  imatrixName?: string;
  /** experts in the tensor (ne2), 1 for a 2-D weight */
  slices: number;
}

export class PlanError extends Error {}

/** llama.cpp's LLAMA_FTYPE_MOSTLY_Q8_0: the base type of all three recipes. */
export const FILE_TYPE_Q8_0 = 7;

const NEVER = [/_norm\.weight$/, /ffn_gate_inp\.weight$/, /ffn_gate_inp_shexp\.weight$/, /ssm_conv1d\.weight$/];

/** Output types by name as llama-quantize spells them (any case). */
export function parseTypeName(s: string): GgmlType | undefined {
  const t = OUTPUT_TYPES.find((id) => typeName(id).toLowerCase() === s.toLowerCase());
  return t;
}

/** The tensor order llama.cpp writes: tensors outside layers first, then by layer number; names within. */
export function llamaOrder(a: string, b: string): number {
  const la = /^blk\.(\d+)\./.exec(a), lb = /^blk\.(\d+)\./.exec(b);
  const na = la ? Number(la[1]) : -1, nb = lb ? Number(lb[1]) : -1;
  if (na !== nb) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}

function layerOf(name: string): number | undefined {
  const m = /^blk\.(\d+)\./.exec(name);
  return m ? Number(m[1]) : undefined;
}

export function defaultQ4Layers(nLayer: number): [number, number] {
  const n = Math.max(1, Math.ceil(nLayer * 0.15));
  return [nLayer - n, nLayer - 1];
}

function recipeType(name: string, o: PlanOptions, q4: [number, number]): GgmlType {
  if (o.recipe === 'q8_0') return GgmlType.Q8_0;
  const l = layerOf(name);
  const q4Layer = o.recipe === 'q2q4' && l !== undefined && l >= q4[0] && l <= q4[1];
  if (/ffn_(gate|up)_exps\.weight$/.test(name)) return q4Layer ? GgmlType.Q4_K : GgmlType.IQ2_XXS;
  if (/ffn_down_exps\.weight$/.test(name)) return q4Layer ? GgmlType.Q4_K : GgmlType.Q2_K;
  return GgmlType.Q8_0;
}

export function planTensors(g: GgufFile, o: PlanOptions): TensorPlan[] {
  const arch = metaString(g, 'general.architecture', '');
  if (arch !== 'qwen35moe') throw new PlanError(`${g.path}: architecture "${arch || '(none)'}" is not qwen35moe; q36-quantize is for Qwen3.6-35B-A3B-shaped models only`);
  const nLayer = metaNumber(g, 'qwen35moe.block_count');
  if (o.q4Layers && o.recipe !== 'q2q4') throw new PlanError('--q4-layers is only meaningful with --recipe q2q4');
  const q4 = o.q4Layers ?? defaultQ4Layers(nLayer);
  if (q4[0] < 0 || q4[1] >= nLayer || q4[0] > q4[1]) throw new PlanError(`--q4-layers ${q4[0]}-${q4[1]}: the model has layers 0-${nLayer - 1}`);
  const overrides = (o.overrides ?? []).map((ov) => {
    let re: RegExp;
    try { re = new RegExp(ov.pattern); } catch (e) { throw new PlanError(`--tensor-type "${ov.pattern}": not a regular expression (${(e as Error).message})`); }
    return { ...ov, re, used: false };
  });
  const plans: TensorPlan[] = [];
  for (const t of [...g.tensors].sort((a, b) => llamaOrder(a.name, b.name))) {
    const shape = t.shape.slice();
    while (shape.length > 1 && shape[shape.length - 1] === 1) shape.pop();
    const quantizable = shape.length >= 2 && t.name.endsWith('weight') && !NEVER.some((r) => r.test(t.name));
    if (!quantizable) { plans.push({ src: t, shape, type: t.type, copy: true, slices: 1 }); continue; }
    let type = recipeType(t.name, o, q4);
    for (const ov of overrides) if (ov.re.test(t.name)) { type = ov.type; ov.used = true; break; }
    const slices = shape.length >= 3 ? shape.slice(2).reduce((a, b) => a * b, 1) : 1;
    if (type === t.type) { plans.push({ src: t, shape, type, copy: true, slices }); continue; }
    if (!INPUT_TYPES.includes(t.type)) throw new PlanError(`${t.name} is ${typeName(t.type)}: q36-quantize reads BF16, F16, F32 or Q8_0 weights (requantizing ${typeName(t.type)} would compound its error)`);
    const ti = typeInfo(type)!;
    if (t.rowElems % ti.blockElems !== 0) throw new PlanError(`${t.name}: rows of ${t.rowElems} values are not a multiple of the ${ti.name} block (${ti.blockElems})`);
    const p: TensorPlan = { src: t, shape, type, copy: false, slices };
    if (usesImatrix(type) && o.imatrix) {
      const e = o.imatrix.entries.get(t.name);
      if (!e) throw new PlanError(`the importance matrix has no entry for ${t.name} (needed for ${ti.name}); was it made for this model?`);
      if (e.ne0 !== t.rowElems || e.counts.length !== slices) throw new PlanError(`the importance matrix entry for ${t.name} holds ${e.counts.length} × ${e.ne0} values; the tensor needs ${slices} × ${t.rowElems}`);
      p.imatrixName = t.name;
    } else if (needsImatrix(type)) {
      throw new PlanError(`${t.name} → ${ti.name} needs an importance matrix: pass --imatrix FILE (make one with q36-imatrix)`);
    }
    plans.push(p);
  }
  for (const ov of overrides) if (!ov.used) throw new PlanError(`--tensor-type "${ov.pattern}=${typeName(ov.type)}" matches no quantizable tensor of ${g.path}`);
  return plans;
}
