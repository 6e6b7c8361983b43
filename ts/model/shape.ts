/**
 * The qwen35moe model shape: every hyperparameter the engine uses, read once from the GGUF, and
 * the list of tensors (names, shapes, allowed types) that a valid file must contain.
 * Nothing else in the code base reads hyperparameters from metadata.
 */
import { GgufError, metaArray, metaNumber, metaString, typeInfo, typeName, type GgufFile } from '../gguf/index.js';
import { GLOBAL_TENSORS, dimOf, layerTensors, type TensorSchema, type TypeClass } from './schema.js';
import type { ModelShape } from './model-shape.js';

export const ARCH = 'qwen35moe';

export type { ModelShape } from './model-shape.js';

/** The product: Qwen3.6-35B-A3B (model-spec §1). */
export const REAL_SHAPE: Omit<ModelShape, 'recurrent' | 'isReal' | 'nNextn' | 'contextLength' | 'eps' | 'ropeTheta'> = {
  nLayer: 40, nEmbd: 2048, nVocab: 248320, nHead: 16, nHeadKv: 2, headDim: 256, nRot: 64,
  ropeSections: [11, 11, 10, 0], ssmConv: 4, ssmHeadDim: 128, ssmKHeads: 16, ssmVHeads: 32, ssmInner: 4096,
  nExpert: 256, nExpertUsed: 8, nFfExp: 512, nFfShexp: 512,
};

function fail(f: GgufFile, problem: string): never {
  throw new GgufError(f.path, problem);
}

/** Reads the hyperparameters; throws a clear error for a foreign architecture or missing keys. */
export function readModelShape(f: GgufFile): ModelShape {
  const arch = metaString(f, 'general.architecture', '');
  if (arch !== ARCH) fail(f, `architecture "${arch || '(missing)'}" is not ${ARCH}: QuarkStar runs Qwen3.6-35B-A3B only`);
  const k = (name: string, fallback?: number) => metaNumber(f, `${ARCH}.${name}`, fallback);
  const blockCount = k('block_count');
  const nNextn = k('nextn_predict_layers', 0);
  const nLayer = blockCount - nNextn;
  if (!(nLayer >= 1)) fail(f, `block_count ${blockCount} − nextn_predict_layers ${nNextn} leaves no layers`);

  let recurrent: boolean[];
  const rl = metaArray(f, `${ARCH}.attention.recurrent_layers`);
  if (rl) {
    if (rl.length < nLayer) fail(f, `${ARCH}.attention.recurrent_layers has ${rl.length} entries, need ${nLayer}`);
    recurrent = Array.from(rl as ArrayLike<unknown>, (v) => Boolean(v)).slice(0, nLayer);
  } else {
    const interval = k('full_attention_interval');
    if (!(interval >= 1)) fail(f, `${ARCH}.full_attention_interval ${interval} must be ≥ 1`);
    recurrent = Array.from({ length: nLayer }, (_, i) => (i + 1) % interval !== 0);
  }

  const tokens = metaArray(f, 'tokenizer.ggml.tokens');
  const embd = f.tensorByName.get('token_embd.weight');
  const nVocab = embd?.shape[1] ?? tokens?.length ?? 0;
  const sectionsRaw = metaArray(f, `${ARCH}.rope.dimension_sections`);
  const ropeSections = sectionsRaw ? Array.from(sectionsRaw as ArrayLike<number>, Number) : [];
  const nHead = k('attention.head_count');
  const headDim = k('attention.key_length');
  const valueLength = k('attention.value_length', headDim);
  if (valueLength !== headDim) fail(f, `attention.key_length ${headDim} ≠ value_length ${valueLength}: not supported`);
  const ssmHeadDim = k('ssm.state_size');
  const ssmVHeads = k('ssm.time_step_rank');
  const ssmInner = k('ssm.inner_size');
  if (ssmInner !== ssmVHeads * ssmHeadDim) fail(f, `ssm.inner_size ${ssmInner} ≠ time_step_rank ${ssmVHeads} × state_size ${ssmHeadDim}`);
  const ssmKHeads = k('ssm.group_count');
  if (ssmKHeads < 1 || ssmVHeads % ssmKHeads !== 0) fail(f, `ssm.time_step_rank ${ssmVHeads} is not a multiple of ssm.group_count ${ssmKHeads}`);
  const nHeadKv = k('attention.head_count_kv');
  if (nHeadKv < 1 || nHead % nHeadKv !== 0) fail(f, `attention.head_count ${nHead} is not a multiple of head_count_kv ${nHeadKv}`);
  const nRot = k('rope.dimension_count', headDim);
  if (nRot > headDim || nRot % 2 !== 0) fail(f, `rope.dimension_count ${nRot} must be even and ≤ head dim ${headDim}`);

  const s: ModelShape = {
    nLayer, nNextn, nEmbd: k('embedding_length'), nVocab, contextLength: k('context_length', 262144),
    eps: k('attention.layer_norm_rms_epsilon', 1e-6), recurrent,
    nHead, nHeadKv, headDim, nRot, ropeTheta: k('rope.freq_base', 1e7), ropeSections,
    ssmConv: k('ssm.conv_kernel'), ssmHeadDim, ssmKHeads, ssmVHeads, ssmInner,
    nExpert: k('expert_count'), nExpertUsed: k('expert_used_count'),
    nFfExp: k('expert_feed_forward_length'), nFfShexp: k('expert_shared_feed_forward_length'),
    isReal: false,
  };
  if (s.nExpertUsed < 1 || s.nExpertUsed > s.nExpert) fail(f, `expert_used_count ${s.nExpertUsed} must be in 1..expert_count ${s.nExpert}`);
  s.isReal = (Object.keys(REAL_SHAPE) as (keyof typeof REAL_SHAPE)[]).every((key) =>
    JSON.stringify(s[key]) === JSON.stringify(REAL_SHAPE[key])) && recurrent.every((r, i) => r === ((i + 1) % 4 !== 0));
  return s;
}

export type { TypeClass } from './schema.js';

export interface TensorRequirement {
  name: string;
  /** acceptable shapes (ggml order, ne0 first); usually one */
  shapes: number[][];
  types: TypeClass;
}

const FLOAT_TYPES = new Set([0, 1, 30]);

/** Every tensor the engine reads, with its expected shape, in file order: the schema (schema.ts) for this shape (model-spec §2.2). */
export function requiredTensors(s: ModelShape): TensorRequirement[] {
  const req = (name: string, t: TensorSchema): TensorRequirement => ({ name, shapes: t.shapes.map((sh) => sh.map((d) => dimOf(s, d))), types: t.types });
  const r: TensorRequirement[] = GLOBAL_TENSORS.map((t) => req(t.key, t));
  for (let i = 0; i < s.nLayer; i++) for (const t of layerTensors(s.recurrent[i])) r.push(req(`blk.${i}.${t.key}`, t));
  return r;
}

/**
 * Checks every required tensor: present, right shape, a type we can compute with. Collects all
 * problems (up to a limit) so a user sees the whole picture at once.
 */
export function validateModel(f: GgufFile, s: ModelShape = readModelShape(f)): ModelShape {
  const problems: string[] = [];
  if (s.nVocab === 0) problems.push('token_embd.weight is missing and tokenizer.ggml.tokens is absent: cannot tell the vocabulary size');
  const tokens = metaArray(f, 'tokenizer.ggml.tokens');
  if (tokens && tokens.length !== s.nVocab) problems.push(`tokenizer.ggml.tokens has ${tokens.length} entries but token_embd.weight has ${s.nVocab} rows`);
  if (!s.recurrent.some((r) => !r)) problems.push('no full-attention layer: check full_attention_interval');
  for (const req of requiredTensors(s)) {
    const t = f.tensorByName.get(req.name);
    if (!t) { problems.push(`${req.name}: missing`); continue; }
    if (!req.shapes.some((sh) => sh.length === t.shape.length && sh.every((v, i) => v === t.shape[i]))) {
      problems.push(`${req.name}: expected [${req.shapes[0].join(',')}], found [${t.shape.join(',')}]`);
    }
    const ti = typeInfo(t.type);
    if (!ti?.supported) problems.push(`${req.name}: type ${typeName(t.type)} is not supported`);
    else if (req.types === 'float' && !FLOAT_TYPES.has(t.type)) problems.push(`${req.name}: type ${ti.name} not allowed here (F32, F16 or BF16)`);
  }
  if (problems.length) {
    const shown = problems.slice(0, 20);
    if (problems.length > 20) shown.push(`… and ${problems.length - 20} more`);
    throw new GgufError(f.path, `not a valid ${ARCH} model:\n  ${shown.join('\n  ')}`);
  }
  return s;
}

/** One-paragraph human summary (for `q36 --info`). */
export function describeShape(s: ModelShape): string {
  const nAttn = s.recurrent.filter((r) => !r).length;
  return [
    `${s.isReal ? 'Qwen3.6-35B-A3B geometry' : 'non-standard qwen35moe geometry (test/synthetic model)'}`,
    `layers ${s.nLayer} (${s.nLayer - nAttn} Gated DeltaNet + ${nAttn} gated attention)${s.nNextn ? ` + ${s.nNextn} MTP` : ''}`,
    `hidden ${s.nEmbd}, vocab ${s.nVocab}, context ${s.contextLength}`,
    `attention ${s.nHead}q/${s.nHeadKv}kv heads × ${s.headDim}, rope ${s.nRot} dims θ=${s.ropeTheta}`,
    `DeltaNet ${s.ssmKHeads}k/${s.ssmVHeads}v heads × ${s.ssmHeadDim}, conv ${s.ssmConv}`,
    `MoE ${s.nExpert} experts top-${s.nExpertUsed} × ${s.nFfExp} + shared ${s.nFfShexp}`,
  ].join('\n');
}

