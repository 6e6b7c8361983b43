/**
 * Options shared by q36, q36-server and q36-bench: backend, context, KV types, sampling, steering.
 * Every bad value is a CliError (exit 2) naming the flag.
 */
import type { DraftSpec } from '../engine/draft/index.js';
import { DEFAULT_CLI_CTX, DEFAULT_DRAFT_MAX, DEFAULT_MTP_DRAFT, DEFAULT_KV, DEFAULT_KV_STREAMING, MAX_BATCH_ROWS, STREAMING } from '../engine/defaults.js';
import { envEngineOptions } from './env.js';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { createRequire } from 'node:module';
import { ADDON_PATH } from '../paths.js';
import { KV_TYPE_NAMES } from '../engine/common.js';
import type { EngineOptions, KvType, SampleOptions, Steering } from '../engine/types.js';
import { CliError } from './load-tokenizer.js';
import { parseSize } from './size.js';


/** Vulkan when a real GPU is visible, else the CPU reference (lavapipe alone is slower than the CPU path). */
/**
 * The backend without --cpu/--vulkan: Vulkan when a GPU is present; else the CPU engine, with one
 * line saying why (only a CPU Vulkan device such as lavapipe, no Vulkan device, or no addon).
 */
export function autoBackend(): { backend: 'cpu' | 'vulkan'; note?: string } {
  let devs: { type: string; name: string }[];
  try {
    const req = createRequire(import.meta.url);
    devs = (req(ADDON_PATH) as { listDevices(): { type: string; name: string }[] }).listDevices();
  } catch (e) {
    return { backend: 'cpu', note: `using the CPU engine: the Vulkan addon did not load (${(e as Error).message.split('\n')[0]})` };
  }
  if (devs.some((d) => d.type !== 'cpu')) return { backend: 'vulkan' };
  return {
    backend: 'cpu',
    note: devs.length ? `using the CPU engine: the only Vulkan device is ${devs.map((d) => d.name).join(', ')}, a CPU device (--vulkan uses it anyway)` : 'using the CPU engine: no Vulkan device found (q36 --doctor says why)',
  };
}

/** llama.cpp spells some flags with one dash and several letters; citty would split them. */
const ALIASES: Record<string, string> = { '-ctk': '--cache-type-k', '-ctv': '--cache-type-v' };
export function normalizeArgv(argv: string[]): string[] {
  return argv.map((a) => ALIASES[a] ?? a);
}

/**
 * The one way the seven tools read arguments (q36 checks its citty table through it too: see
 * checkArgs): node:util's strict parse — unknown flags, a flag without its value, a value given to
 * a switch and stray arguments are errors, worded alike in every tool — after llama.cpp's aliases,
 * and with a negative number after a flag that takes a value read as that value (`--x -1`).
 */
type Options = NonNullable<ParseArgsConfig['options']>;

function prepare(argv: string[], options: Options): string[] {
  const takesValue = (flag: string) => {
    if (flag.startsWith('--')) return options[flag.slice(2)]?.type === 'string';
    return Object.values(options).some((o) => o.short === flag.slice(1) && o.type === 'string');
  };
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = ALIASES[argv[i]] ?? argv[i], next = argv[i + 1];
    // joined as node:util reads a value starting with a dash: --flag=-1, -n-1
    if (a.startsWith('-') && !a.includes('=') && takesValue(a) && next !== undefined && /^-(\d|\.\d)/.test(next)) { out.push(a.startsWith('--') ? `${a}=${next}` : `${a}${next}`); i++; } else out.push(a);
  }
  return out;
}

/** node:util's parse errors in the tools' own words. */
function argError(e: Error): CliError {
  const m = e.message;
  let r: RegExpExecArray | null;
  if ((r = /^Unknown option '([^']+)'/.exec(m))) return new CliError(`unknown flag ${r[1]} (see --help)`);
  if ((r = /^Option '(?:-\w, )?([^ ']+)(?: <value>)?' argument missing/.exec(m))) return new CliError(`${r[1]} needs a value (see --help)`);
  if ((r = /^Option '(?:-\w, )?([^ ']+)' argument is ambiguous/.exec(m))) return new CliError(`${r[1]} needs a value (one starting with a dash: ${r[1]}=-VALUE)`);
  if ((r = /^Option '(?:-\w, )?([^ ']+)' does not take an argument/.exec(m))) return new CliError(`${r[1]} takes no value (see --help)`);
  if ((r = /^Unexpected argument '([^']*)'/.exec(m))) return new CliError(`unexpected argument "${r[1]}" (see --help)`);
  return new CliError(m);
}

/** This process's arguments (or `args`) parsed against `options`; errors are CliErrors (exit 2). */
export function parseCli<O extends Options>(options: O, o: { args?: string[]; positionals?: boolean } = {}) {
  try {
    return parseArgs({ args: prepare(o.args ?? process.argv.slice(2), options), options, allowPositionals: o.positionals ?? false, allowNegative: true });
  } catch (e) {
    throw argError(e as Error);
  }
}

/** The values of parseCli (the tools without positional arguments). */
export function parseCliArgs<O extends Options>(options: O) {
  return parseCli(options).values;
}

export function num(flag: string, v: string | undefined, o: { min?: number; max?: number; int?: boolean } = {}): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new CliError(`${flag} expects a number, got "${v}"`);
  if (o.int && !Number.isInteger(n)) throw new CliError(`${flag} expects an integer, got "${v}"`);
  if (o.min !== undefined && n < o.min) throw new CliError(`${flag} must be ≥ ${o.min}, got ${v}`);
  if (o.max !== undefined && n > o.max) throw new CliError(`${flag} must be ≤ ${o.max}, got ${v}`);
  return n;
}

export function kvType(flag: string, v: string | undefined): KvType | undefined {
  if (v === undefined) return undefined;
  if (!(KV_TYPE_NAMES as string[]).includes(v)) throw new CliError(`${flag} must be one of ${KV_TYPE_NAMES.filter((k) => k !== 'f32').join(', ')} (got "${v}")`);
  return v as KvType;
}

export const ENGINE_ARGS = {
  cpu: { type: 'boolean', description: 'use the CPU (WASM reference) backend' },
  vulkan: { type: 'boolean', description: 'use the Vulkan backend (default when a Vulkan GPU is present)' },
  'vk-device': { type: 'string', description: 'Vulkan device index (see --list-devices; default: the first GPU, or Q36_VK_DEVICE)' },
  'vk-weights': { type: 'string', description: 'Vulkan weights: import (zero-copy mmap, VK_EXT_external_memory_host), upload (copy to device memory) or auto (default: import on unified memory)' },
  'vk-memory-limit': { type: 'string', description: 'Vulkan: device memory the engine may plan for (e.g. 16GiB: a 16 GB board on a larger GPU; default: the device\'s device-local memory)' },
  ctx: { type: 'string', description: 'context size in tokens (default: 8192, or the model\'s context length if smaller)' },
  'cache-type-k': { type: 'string', description: 'K cache type: f16, q8_0, q4_0 (alias -ctk; default f16 on CPU, q8_0 on Vulkan)' },
  'cache-type-v': { type: 'string', description: 'V cache type: f16, q8_0, q4_0 (alias -ctv; default f16 on CPU, q4_0 on Vulkan)' },
  'expert-cache-mb': { type: 'string', description: 'CPU: routed-expert cache size in MiB when experts are streamed (default: all free WASM memory)' },
  'ssd-streaming': { type: 'boolean', description: 'routed experts stay in the GGUF and stream through a bounded cache (both backends; F16 KV unless -ctk/-ctv say otherwise; docs/ssd-streaming.md)' },
  'ssd-streaming-cache-experts': { type: 'string', description: 'with --ssd-streaming: the expert cache as a slot count (e.g. 512) or a size (6GB, 512MB); default: 80% of the device memory left (Vulkan), the WASM memory left (CPU)' },
  'ssd-streaming-preload-experts': { type: 'string', description: 'with --ssd-streaming: preload this many of the most used experts (default: as many as the cache holds; counts in ~/.q36/expert-usage/)' },
  'ssd-streaming-cold': { type: 'boolean', description: 'with --ssd-streaming: start with an empty expert cache' },
  'ssd-streaming-full-layers': { type: 'string', description: 'with --ssd-streaming: the routed experts of the first N layers stay resident (charged at their size)' },
  draft: { type: 'string', description: 'speculative decoding: ngram (drafts looked up in the context: no extra weights; the tokens are the same as without, sampled ones too)' },
  'draft-max': { type: 'string', description: `with --draft: the most drafted tokens one step verifies (1-${MAX_BATCH_ROWS - 1}, default ${DEFAULT_DRAFT_MAX})` },
  mtp: { type: 'string', description: 'speculative decoding with the model\'s MTP head (an MTP-only GGUF, or auto: the main file\'s); with --draft ngram too: prompt lookup first, the head where the context has no match' },
  'mtp-draft': { type: 'string', description: `with --mtp: the most drafted tokens a step (1-${MAX_BATCH_ROWS - 1}, default ${DEFAULT_MTP_DRAFT})` },
  'mtp-margin': { type: 'string', description: 'with --mtp: a draft chain goes on while the head\'s top probability is at least this (0-1, default 0)' },
  'dir-steering-file': { type: 'string', description: 'steering directions: flat n_layer × hidden f32 file' },
  'dir-steering-attn': { type: 'string', description: 'steering scale after attention outputs (default 0)' },
  'dir-steering-ffn': { type: 'string', description: 'steering scale after FFN outputs (default 1 with a file, else 0)' },
} as const;

/** ENGINE_ARGS as node:util parseArgs options (q36-server and q36-bench parse with node:util, q36 with citty). */
export const ENGINE_PARSE_OPTIONS = Object.fromEntries(Object.entries(ENGINE_ARGS).map(([k, v]) => [k, { type: v.type }])) as {
  [K in keyof typeof ENGINE_ARGS]: { type: (typeof ENGINE_ARGS)[K]['type'] };
};

export const SAMPLING_ARGS = {
  temp: { type: 'string', description: 'temperature (0 = greedy)', default: '0.6' },
  'top-p': { type: 'string', description: 'nucleus sampling mass', default: '0.95' },
  'top-k': { type: 'string', description: 'keep the k most likely tokens (0 = off)', default: '20' },
  'min-p': { type: 'string', description: 'drop tokens below min-p × the top probability', default: '0' },
  seed: { type: 'string', description: 'sampler seed (reproducible sampling)', default: '0' },
} as const;

type Str = string | undefined;

/**
 * `draft`: what the tool parsed with draftSpec (the engine sizes its draft steps for it); a tool
 * that passes none does not draft, and its drafting flags are refused rather than ignored.
 */
export function engineOptions(model: string, a: Record<string, unknown>, modelContext: number, draft?: DraftSpec): EngineOptions {
  if (a.cpu && a.vulkan) throw new CliError('give --cpu or --vulkan, not both');
  const ssd = ssdStreaming(a, model);
  // streaming reads experts on libuv's worker threads: more of them than its default 4 keep more
  // reads in flight (takes effect if nothing has used the pool yet; a user's own setting wins)
  if (ssd && process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = String(STREAMING.readThreads);
  const ctx = num('--ctx', a.ctx as Str, { min: 1, int: true }) ?? Math.min(DEFAULT_CLI_CTX, modelContext);
  if (ctx > modelContext) throw new CliError(`--ctx ${ctx} exceeds the model's context length ${modelContext}`);
  const kIn = kvType('-ctk/--cache-type-k', a['cache-type-k'] as Str);
  const vIn = kvType('-ctv/--cache-type-v', a['cache-type-v'] as Str);
  const mb = num('--expert-cache-mb', a['expert-cache-mb'] as Str, { min: 1 });
  const auto = a.vulkan || a.cpu ? undefined : autoBackend();
  if (auto?.note) process.stderr.write(`${auto.note}\n`);
  const backend = a.vulkan ? 'vulkan' : a.cpu ? 'cpu' : auto!.backend;
  // flags win over the environment (read once, ts/cli/env.ts)
  let env;
  try { env = envEngineOptions(); } catch (e) { throw new CliError((e as Error).message); }
  const vkDevice = num('--vk-device', a['vk-device'] as Str, { min: 0, int: true }) ?? env.vkDevice;
  const vkWeights = (a['vk-weights'] as Str) ?? env.vkWeights;
  if (vkWeights !== undefined && !['auto', 'import', 'upload'].includes(vkWeights)) throw new CliError(`--vk-weights must be auto, import or upload (got "${vkWeights}")`);
  const vkMemoryLimit = parseSize('--vk-memory-limit', a['vk-memory-limit'] as Str);
  // streaming keeps F16 KV unless asked otherwise (the QuarkStar README's default)
  const kvDefault = ssd ? DEFAULT_KV_STREAMING : DEFAULT_KV[backend];
  const k = kIn ?? kvDefault.k;
  const v = vIn ?? kvDefault.v;
  const asked = ['draft', 'draft-max', 'mtp-draft', 'mtp-margin'].find((f) => a[f] !== undefined) ?? (a.mtp !== undefined && a['dump-mtp-logits'] === undefined ? 'mtp' : undefined);
  if (!draft && asked) throw new CliError(`--${asked}: this tool does not draft (speculative decoding: q36, q36-server, q36-agent, q36-bench)`);
  return {
    model, backend, ctx, kvTypes: { k, v }, draftMax: draft && Math.max(draft.max, draft.mtp?.max ?? 0), vkDevice, vkWeights: vkWeights as EngineOptions['vkWeights'], vkMatvecRows: env.vkMatvecRows, vkMvTypes: env.vkMvTypes, vkMvq: env.vkMvq, vkCoopmat: env.vkCoopmat, vkF16: env.vkF16,
    expertCacheMiB: mb, steering: steering(a), vkMemoryLimit,
    ...(ssd ? { streamExperts: true, expertCacheSlots: ssd.slots, expertCacheMiB: ssd.bytes !== undefined ? ssd.bytes / 2 ** 20 : mb, expertUsage: ssd.usage, expertFullLayers: ssd.full } : {}),
  };
}

/**
 * --draft KIND [--draft-max N], or --mtp FILE|auto [--mtp-draft N] [--mtp-margin F] where the tool
 * drafts with the MTP head (`mtp`: q36, q36-server, q36-agent, q36-bench), or both (--draft ngram
 * --mtp FILE: `ngram+mtp`, prompt lookup first); `kinds` are the drafters this
 * tool offers (q36-bench adds its measurement drafters). q36 --dump-mtp-logits takes --mtp alone.
 */
export function draftSpec(a: Record<string, unknown>, kinds: readonly string[] = ['ngram'], o: { mtp?: boolean } = {}): DraftSpec | undefined {
  const max = num('--draft-max', a['draft-max'] as Str, { min: 1, max: MAX_BATCH_ROWS - 1, int: true });
  if (a.mtp !== undefined && a['dump-mtp-logits'] === undefined) {
    if (!o.mtp) throw new CliError('--mtp: this tool does not draft with the MTP head; --draft ngram drafts from the context without extra weights');
    const mtpMax = num('--mtp-draft', a['mtp-draft'] as Str, { min: 1, max: MAX_BATCH_ROWS - 1, int: true }) ?? DEFAULT_MTP_DRAFT;
    const mtp = { file: a.mtp as string, margin: num('--mtp-margin', a['mtp-margin'] as Str, { min: 0, max: 1 }) ?? 0 };
    if (a.draft === undefined) {
      if (max !== undefined) throw new CliError('--draft-max needs --draft (with --mtp: --mtp-draft)');
      return { kind: 'mtp', max: mtpMax, mtp };
    }
    // both: prompt lookup first, the head where the context has no match
    if (a.draft !== 'ngram') throw new CliError(`--mtp drafts together with --draft ngram only (got --draft ${a.draft as string})`);
    const nMax = max ?? DEFAULT_DRAFT_MAX;
    return { kind: 'ngram+mtp', max: nMax, mtp: { ...mtp, max: mtpMax } };
  }
  const f = ['mtp-draft', 'mtp-margin'].find((k) => a[k] !== undefined);
  if (f) throw new CliError(`--${f} needs --mtp`);
  const kind = a.draft as Str;
  if (kind === undefined) {
    if (max !== undefined) throw new CliError('--draft-max needs --draft');
    return undefined;
  }
  if (!kinds.includes(kind)) throw new CliError(`--draft must be ${kinds.join(', ').replace(/, ([^,]*)$/, ' or $1')} (got "${kind}")`);
  return { kind, max: max ?? DEFAULT_DRAFT_MAX };
}

/**
 * --ssd-streaming and its options: the cache size (a slot count or a byte size), the warm start
 * (the usage file, how many to preload, or cold) and the resident full layers; any of them
 * without --ssd-streaming is refused by name rather than ignored.
 */
function ssdStreaming(a: Record<string, unknown>, model: string): { slots?: number; bytes?: number; full?: number; usage: NonNullable<EngineOptions['expertUsage']> } | undefined {
  const size = a['ssd-streaming-cache-experts'] as Str;
  if (!a['ssd-streaming']) {
    const f = ['ssd-streaming-cache-experts', 'ssd-streaming-preload-experts', 'ssd-streaming-cold', 'ssd-streaming-full-layers'].find((k) => a[k] !== undefined);
    if (f) throw new CliError(`--${f} needs --ssd-streaming`);
    return undefined;
  }
  const preload = num('--ssd-streaming-preload-experts', a['ssd-streaming-preload-experts'] as Str, { min: 0, int: true });
  if (preload !== undefined && a['ssd-streaming-cold']) throw new CliError('give --ssd-streaming-cold or --ssd-streaming-preload-experts, not both');
  // the routes taken are counted per model file (its fingerprint inside guards against a
  // same-named other model)
  const usage = { file: path.join(os.homedir(), '.q36', 'expert-usage', `${path.basename(model)}.json`), preload, cold: a['ssd-streaming-cold'] === true };
  const full = num('--ssd-streaming-full-layers', a['ssd-streaming-full-layers'] as Str, { min: 0, int: true });
  if (size === undefined) return { usage, full };
  if (/^\s*\d+\s*$/.test(size)) return { slots: num('--ssd-streaming-cache-experts', size, { min: 1, int: true }), usage, full };
  return { bytes: parseSize('--ssd-streaming-cache-experts', size), usage, full };
}

function steering(a: Record<string, unknown>): Steering | undefined {
  const file = a['dir-steering-file'] as Str;
  const attn = num('--dir-steering-attn', a['dir-steering-attn'] as Str);
  const ffn = num('--dir-steering-ffn', a['dir-steering-ffn'] as Str);
  if (!file) {
    if (attn || ffn) throw new CliError('--dir-steering-attn/--dir-steering-ffn need --dir-steering-file');
    return undefined;
  }
  let bytes: Buffer;
  try { bytes = fs.readFileSync(file); } catch (e) { throw new CliError(`cannot read --dir-steering-file "${file}": ${(e as NodeJS.ErrnoException).code}`); }
  if (bytes.length % 4 !== 0) throw new CliError(`--dir-steering-file "${file}": ${bytes.length} bytes is not a whole number of f32 values`);
  const directions = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return { directions, attnScale: attn ?? 0, ffnScale: ffn ?? (attn === undefined ? 1 : 0) };
}

export function sampleOptions(a: Record<string, unknown>): SampleOptions & { seed: number } {
  return {
    temperature: num('--temp', a.temp as Str, { min: 0 })!,
    topP: num('--top-p', a['top-p'] as Str, { min: 0, max: 1 })!,
    topK: num('--top-k', a['top-k'] as Str, { min: 0, int: true })!,
    minP: num('--min-p', a['min-p'] as Str, { min: 0, max: 1 })!,
    seed: num('--seed', a.seed as Str, { int: true })!,
  };
}

/**
 * q36's citty table checked by the same rules as the other tools (parseCli): citty itself would
 * ignore a typo like --tmep, a flag missing its value and stray words. citty then reads `argv` as
 * given (it takes a negative number after a flag as its value already).
 */
export function checkArgs(argv: string[], args: Record<string, { type: string; alias?: string }>): void {
  const options: Options = { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } };
  for (const [name, def] of Object.entries(args)) {
    const type = def.type === 'boolean' ? 'boolean' : 'string';
    options[name] = { type, ...(def.alias?.length === 1 ? { short: def.alias } : name.length === 1 ? { short: name } : {}) };
    if (def.alias && def.alias.length > 1) options[def.alias] = { type };
  }
  parseCli(options, { args: argv });
}
