/**
 * The engine's defaults, in one place (the CLI's are in ts/cli/options.ts, the server's in
 * ts/cli/q36-server.ts): what a caller gets when an option is left out.
 */
import type { KvType } from './types.js';

/** KV cache types: Vulkan keeps q8_0 K / q4_0 V resident (QuarkStar's choice), the CPU f16 / f16. */
export const DEFAULT_KV: Record<'cpu' | 'vulkan', { k: KvType; v: KvType }> = { cpu: { k: 'f16', v: 'f16' }, vulkan: { k: 'q8_0', v: 'q4_0' } };
/** KV types with SSD streaming (--ssd-streaming) on either backend, unless -ctk/-ctv say otherwise */
export const DEFAULT_KV_STREAMING: { k: KvType; v: KvType } = { k: 'f16', v: 'f16' };

/**
 * SSD streaming (docs/ssd-streaming.md): the share of the device memory left that the expert
 * cache takes without a size (Vulkan), and the reads: positioned reads in flight at once, the
 * libuv worker threads the CLI asks for to run them (UV_THREADPOOL_SIZE, unless set), the
 * host-visible stage of a discrete GPU's reads, and the largest read that adjacent parts merge into.
 */
export const STREAMING = { cacheFraction: 0.8, readsInFlight: 16, readThreads: 16, stageBytes: 64 << 20, mergeBytes: 8 << 20 } as const;

/**
 * Tokens per prefill step: the CPU takes 64 (a DeltaNet chunk); Vulkan at least 512, enough
 * (token, expert) pairs per expert (16 on average for 8 of 256) for the grouped expert matmul to
 * reuse each decoded weight tile — and 2048 where memory is plentiful (vulkanChunk()).
 */
export const DEFAULT_CHUNK = { cpu: 64, vulkan: 512 } as const;

/** Devices with this much device-local memory take 2048-token prefill steps. */
export const LARGE_DEVICE_BYTES = 32 * 2 ** 30;

/**
 * The Vulkan prefill step for a device: 2048 tokens on a large GPU — four times the pairs per
 * expert tile and a quarter of the steps (H200, full q2, 2026-12-01: a 2048-token prompt 2491 t/s
 * against 1579 with 512-token steps; docs/journal/vulkan-speed-2026-11-29-to-12-03.md) for about 360 MiB more scratch at ctx 32K —
 * and 512 elsewhere (the 16 GB BC-250 keeps its memory for weights and KV; lavapipe).
 */
export function vulkanChunk(device: { deviceLocalBytes: number; type: string }): number {
  // (a CPU device such as lavapipe reports the host's memory: it keeps 512)
  return device.type !== 'cpu' && device.deviceLocalBytes >= LARGE_DEVICE_BYTES ? 2048 : DEFAULT_CHUNK.vulkan;
}

/** An automatic snapshot every this many tokens (at chunk boundaries). */
export const DEFAULT_SNAPSHOT_INTERVAL = 512;

/** The CLI's context when --ctx is not given (the model's own length if smaller). */
export const DEFAULT_CLI_CTX = 8192;

/**
 * q36-agent's context when --ctx is not given (the model's own if smaller), the QuarkStar README's
 * presets: 32768 tokens with the weights resident (Q8_0 keys, Q4_0 values on Vulkan), 100000 with
 * --ssd-streaming (F16 KV); both plan within a 16 GB BC-250 (test/memory-plan.test.ts).
 */
export const AGENT_CTX = { resident: 32768, streaming: 100000 } as const;

/**
 * Most sessions one batched decode step takes (q36-server --batched-session): more rows use the
 * ordered fallback. 8 keeps the rows inside one 8-row matmul tile (matvec.glsl's MATMUL_TOKENS;
 * Q8_0's as two 4-row workgroups, graph.ts matmulTokens),
 * so each row's products are computed the same way whatever its batch-mates.
 */
export const MAX_BATCH_ROWS = 8;

/**
 * Drafted tokens a step verifies when --draft is given without --draft-max: four drafts make a
 * five-row step, well inside one batched step's rows (MAX_BATCH_ROWS).
 */
export const DEFAULT_DRAFT_MAX = 4;

/** MTP drafts a step without --mtp-draft (the QuarkStar README's --mtp-draft 2). */
export const DEFAULT_MTP_DRAFT = 2;
