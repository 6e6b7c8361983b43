/**
 * The engine's defaults, in one place (the CLI's are in ts/cli/options.ts, the server's in
 * ts/cli/q36-server.ts): what a caller gets when an option is left out.
 */
import type { KvType } from './types.js';

/** KV cache types: Vulkan keeps q8_0 K / q4_0 V resident (QuarkStar's choice), the CPU f16 / f16. */
export const DEFAULT_KV: Record<'cpu' | 'vulkan', { k: KvType; v: KvType }> = { cpu: { k: 'f16', v: 'f16' }, vulkan: { k: 'q8_0', v: 'q4_0' } };

/**
 * Tokens per prefill step: the CPU takes 64 (a DeltaNet chunk); Vulkan 512, enough (token,
 * expert) pairs per expert (16 on average for 8 of 256) for the grouped expert matmul to reuse
 * each decoded weight tile.
 */
export const DEFAULT_CHUNK = { cpu: 64, vulkan: 512 } as const;

/** An automatic snapshot every this many tokens (at chunk boundaries). */
export const DEFAULT_SNAPSHOT_INTERVAL = 512;

/** The CLI's context when --ctx is not given (the model's own length if smaller). */
export const DEFAULT_CLI_CTX = 8192;
