/**
 * Activation statistics for q36-imatrix: the CPU forward pass adds, for every weight it
 * multiplies, the squared input activations per column and the token count (routed experts per
 * expert, only the tokens routed to each), as llama-imatrix collects them. The output head is not
 * collected (llama-imatrix leaves it out by default).
 */
import type { CpuEngine } from './cpu-engine.js';
import { LAYER_SLOTS, N_SLOTS } from './layout.js';

/** One weight's activation statistics, llama.cpp's imatrix entry (quantize/imatrix-file.ts reads and writes them). */
export interface ImatrixEntry {
  /** columns (the weight's row length) */
  ne0: number;
  /** ne0 × counts.length sums of squares */
  sums: Float32Array;
  /** tokens seen, per expert (length 1 for a dense weight) */
  counts: Float32Array;
}

/** The layer weights that are matrix-multiplied (their inputs are what an imatrix records). */
const COLLECTED = [
  'ffn_gate_inp.weight', 'ffn_gate_exps.weight', 'ffn_up_exps.weight', 'ffn_down_exps.weight',
  'ffn_gate_inp_shexp.weight', 'ffn_gate_shexp.weight', 'ffn_up_shexp.weight', 'ffn_down_shexp.weight',
  'attn_q.weight', 'attn_k.weight', 'attn_v.weight', 'attn_output.weight',
  'attn_qkv.weight', 'attn_gate.weight', 'ssm_beta.weight', 'ssm_alpha.weight', 'ssm_out.weight',
];
const EXPERT = new Set(['ffn_gate_exps.weight', 'ffn_up_exps.weight', 'ffn_down_exps.weight']);

interface Buffer { name: string; ptr: number; ne0: number; nExp: number }

export class ActivationStats {
  private readonly buffers: Buffer[] = [];

  constructor(private readonly e: CpuEngine) {
    const s = e.shape, core = e.core;
    const table = core.alloc(s.nLayer * N_SLOTS * 4);
    core.u8(table, s.nLayer * N_SLOTS * 4).fill(0);
    const dv = () => new DataView(core.memory.buffer);
    for (let l = 0; l < s.nLayer; l++) {
      for (const key of COLLECTED) {
        const name = `blk.${l}.${key}`;
        const t = e.file.tensorByName.get(name);
        if (!t) continue;
        const nExp = EXPERT.has(key) ? s.nExpert : 1;
        const bytes = (t.shape[0] * nExp + nExp) * 4;
        const ptr = core.alloc(bytes);
        core.u8(ptr, bytes).fill(0);
        dv().setUint32(table + (l * N_SLOTS + LAYER_SLOTS[key]) * 4, ptr, true);
        this.buffers.push({ name, ptr, ne0: t.shape[0], nExp });
      }
    }
    (core.x as unknown as { setActivationStats(p: number): void }).setActivationStats(table);
  }

  /** The sums and counts so far, by weight name (copies). */
  read(): Map<string, ImatrixEntry> {
    const out = new Map<string, ImatrixEntry>();
    for (const b of this.buffers) {
      const v = this.e.core.f32(b.ptr, b.ne0 * b.nExp + b.nExp);
      out.set(b.name, { ne0: b.ne0, sums: v.slice(0, b.ne0 * b.nExp), counts: v.slice(b.ne0 * b.nExp) });
    }
    return out;
  }

  /** Stops collecting (the buffers stay allocated: WASM memory is not returned). */
  stop(): void {
    (this.e.core.x as unknown as { setActivationStats(p: number): void }).setActivationStats(0);
  }
}
