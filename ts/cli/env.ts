/**
 * Every environment variable QuarkStar reads, read once here at the CLI edge (docs/environment.md
 * lists them); the engine and the server take option objects and never look at the environment.
 * A malformed value is an error naming the variable, not a silent default.
 */
import type { EngineOptions } from '../engine/types.js';

export interface EnvSettings {
  /** Q36_VK_DEVICE: Vulkan device index (as --vk-device) */
  vkDevice?: number;
  /** Q36_VK_WEIGHTS: auto | import | upload (as --vk-weights) */
  vkWeights?: EngineOptions['vkWeights'];
  /** Q36_VK_MV_ROWS: fix decode matvec rows per workgroup (1, 2 or 4), for measurements */
  vkMatvecRows?: 1 | 2 | 4;
  /** Q36_VK_MV: weight types whose one-row products run on mv.comp (q2_k,iq2_xxs, or none), for measurements */
  vkMvTypes?: string[];
  /** Q36_VK_MVQ=0|1|experts: which products run mvq.comp's int8 levels (none, all, the routed experts), for measurements */
  vkMvq?: boolean | 'experts';
  /** Q36_VK_COOPMAT=0|1: the prefill matmuls on the matrix units where the device has them (1, default) or the f32 tiles (0), for measurements and the BC-250's arithmetic */
  vkCoopmat?: boolean;
  /** Q36_VK_F16=0|1: the prefill tiles' products in packed f16 where the matrix units are not in use (1), or exact f32 (0, default) */
  vkF16?: boolean;
  /** Q36_VK_SESSION_BATCH=0: q36-server --batched-session runs the ordered fallback instead of batched Vulkan steps (measurements, workarounds) */
  vkSessionBatch?: boolean;
  /** Q36_HF_BASE: the download mirror (as --base-url) */
  hfBase?: string;
  /** HF_TOKEN: the Hugging Face token (as --token) */
  hfToken?: string;
  /** Q36_AGENT_SESSIONS: q36-agent's saved sessions (as --sessions-dir) */
  agentSessions?: string;
  /** Q36_MODEL: the model file every command loads without -m */
  modelFile?: string;
  /** Q36_MODELS: the model store (q36 download writes there, q36 models lists it; default ~/.q36/models) */
  modelStore?: string;
}

/** Only the model's location (Q36_MODEL, Q36_MODELS): read where option defaults are built, never throws. */
export function modelEnv(env: NodeJS.ProcessEnv = process.env): Pick<EnvSettings, 'modelFile' | 'modelStore'> {
  return { modelFile: env.Q36_MODEL || undefined, modelStore: env.Q36_MODELS || undefined };
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): EnvSettings {
  const out: EnvSettings = {};
  const dev = env.Q36_VK_DEVICE;
  if (dev !== undefined && dev !== '') {
    if (!/^\d+$/.test(dev)) throw new Error(`Q36_VK_DEVICE must be a device index (0, 1, …), got "${dev}"`);
    out.vkDevice = Number(dev);
  }
  const w = env.Q36_VK_WEIGHTS;
  if (w !== undefined && w !== '') {
    if (!['auto', 'import', 'upload'].includes(w)) throw new Error(`Q36_VK_WEIGHTS must be auto, import or upload, got "${w}"`);
    out.vkWeights = w as EnvSettings['vkWeights'];
  }
  const r = env.Q36_VK_MV_ROWS;
  if (r !== undefined && r !== '') {
    if (!['1', '2', '4'].includes(r)) throw new Error(`Q36_VK_MV_ROWS must be 1, 2 or 4, got "${r}"`);
    out.vkMatvecRows = Number(r) as 1 | 2 | 4;
  }
  const mv = env.Q36_VK_MV;
  if (mv !== undefined && mv !== '') {
    if (!/^(none|[a-z0-9_]+(,[a-z0-9_]+)*)$/.test(mv)) throw new Error(`Q36_VK_MV must be weight type names separated by commas (q2_k,iq2_xxs) or none, got "${mv}"`);
    out.vkMvTypes = mv === 'none' ? [] : mv.split(',');
  }
  const q = env.Q36_VK_MVQ;
  if (q !== undefined && q !== '') {
    if (!['0', '1', 'experts'].includes(q)) throw new Error(`Q36_VK_MVQ must be 0 (f32 matvecs), 1 (int8 levels wherever the device has the packed dot, even emulated) or experts (the routed experts only), got "${q}"`);
    out.vkMvq = q === 'experts' ? 'experts' : q === '1';
  }
  const cm = env.Q36_VK_COOPMAT;
  if (cm !== undefined && cm !== '') {
    if (!['0', '1'].includes(cm)) throw new Error(`Q36_VK_COOPMAT must be 0 (f32 prefill tiles) or 1 (matrix units where the device has them), got "${cm}"`);
    out.vkCoopmat = cm === '1';
  }
  const f16 = env.Q36_VK_F16;
  if (f16 !== undefined && f16 !== '') {
    if (!['0', '1'].includes(f16)) throw new Error(`Q36_VK_F16 must be 0 (exact f32 prefill tiles) or 1 (packed f16 products where there are no matrix units), got "${f16}"`);
    out.vkF16 = f16 === '1';
  }
  const sb = env.Q36_VK_SESSION_BATCH;
  if (sb !== undefined && sb !== '') {
    if (!['0', '1'].includes(sb)) throw new Error(`Q36_VK_SESSION_BATCH must be 0 (ordered fallback) or 1 (batched steps), got "${sb}"`);
    out.vkSessionBatch = sb === '1';
  }
  if (env.Q36_HF_BASE) out.hfBase = env.Q36_HF_BASE;
  if (env.HF_TOKEN) out.hfToken = env.HF_TOKEN;
  if (env.Q36_AGENT_SESSIONS) out.agentSessions = env.Q36_AGENT_SESSIONS;
  Object.assign(out, modelEnv(env));
  return out;
}

/** The engine options the environment supplies where no flag did (flags win). */
export function envEngineOptions(e: EnvSettings = readEnv()): Pick<EngineOptions, 'vkDevice' | 'vkWeights' | 'vkMatvecRows' | 'vkMvTypes' | 'vkMvq' | 'vkCoopmat' | 'vkF16'> {
  return { vkDevice: e.vkDevice, vkWeights: e.vkWeights, vkMatvecRows: e.vkMatvecRows, vkMvTypes: e.vkMvTypes, vkMvq: e.vkMvq, vkCoopmat: e.vkCoopmat, vkF16: e.vkF16 };
}
