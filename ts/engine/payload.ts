/**
 * The `Q36 ` session payload (QuarkStar README, "Disk KV Cache"): backend-independent, so a
 * snapshot saved by the CPU engine loads on Vulkan and vice versa.
 *
 *   u32 × 14 (v2, f16 KV) or × 16 (v3, typed KV): magic "Q36 ", version, ctx, chunk, tokens,
 *     vocab, layers, KV heads, key dim, value dim, conv width, conv dim, state dim, dt rank,
 *     [K type, V type] (ggml type ids)
 *   u32[tokens] token ids; f32[vocab] next-token logits
 *   per full-attention layer (layer order): u32 rows, rows × K row bytes, rows × V row bytes
 *   per DeltaNet layer (layer order): f32 conv history (channel-major, oldest first), f32
 *     recurrent state (value column j of head h at (h·dv + j)·dk, contiguous over the key index)
 */
import { GgmlType, rowBytes, typeName } from '../gguf/index.js';
import type { ModelShape } from '../model/shape.js';
import { KV_TYPE_IDS } from './common.js';
import type { KvType } from './types.js';

export const PAYLOAD_MAGIC = 0x20363351; // "Q36 " little-endian

export interface PayloadParts {
  ctx: number;
  chunk: number;
  kType: number;
  vType: number;
  tokens: ArrayLike<number>;
  logits: Float32Array;
  /** per attention layer, in layer order: K and V bytes of `tokens.length` rows */
  kv: { k: Uint8Array; v: Uint8Array }[];
  /** per DeltaNet layer, in layer order */
  recurrent: { conv: Uint8Array; ssm: Uint8Array }[];
}

export class PayloadError extends Error {
  constructor(problem: string) {
    super(`session payload: ${problem}`);
    this.name = 'PayloadError';
  }
}

export function stateSizes(s: ModelShape) {
  const convCh = 2 * s.ssmKHeads * s.ssmHeadDim + s.ssmInner;
  return {
    convCh,
    convBytes: convCh * (s.ssmConv - 1) * 4,
    ssmBytes: s.ssmVHeads * s.ssmHeadDim * s.ssmHeadDim * 4,
    kvDim: s.nHeadKv * s.headDim,
  };
}

/** KV cache bytes one token takes, summed over the full-attention layers. */
export function kvBytesPerToken(s: ModelShape, kv: { k: KvType; v: KvType }): number {
  const kvDim = stateSizes(s).kvDim;
  const nAttn = s.recurrent.filter((r) => !r).length;
  return nAttn * (rowBytes(KV_TYPE_IDS[kv.k], kvDim) + rowBytes(KV_TYPE_IDS[kv.v], kvDim));
}

/** Bytes of one session's DeltaNet state (conv history + recurrent state of every DeltaNet layer). */
export function recurrentStateBytes(s: ModelShape): number {
  const st = stateSizes(s);
  return s.recurrent.filter((r) => r).length * (st.convBytes + st.ssmBytes);
}

function headerFields(s: ModelShape, p: Pick<PayloadParts, 'ctx' | 'chunk' | 'kType' | 'vType'>, nTokens: number): number[] {
  const typed = !(p.kType === GgmlType.F16 && p.vType === GgmlType.F16);
  const f = [PAYLOAD_MAGIC, typed ? 3 : 2, p.ctx, p.chunk, nTokens, s.nVocab, s.nLayer, s.nHeadKv, s.headDim, s.headDim,
    s.ssmConv, stateSizes(s).convCh, s.ssmHeadDim, s.ssmVHeads];
  if (typed) f.push(p.kType, p.vType);
  return f;
}

export function encodePayload(s: ModelShape, p: PayloadParts): Uint8Array {
  const n = p.tokens.length;
  const fields = headerFields(s, p, n);
  let size = fields.length * 4 + n * 4 + s.nVocab * 4;
  for (const l of p.kv) size += 4 + l.k.byteLength + l.v.byteLength;
  for (const r of p.recurrent) size += r.conv.byteLength + r.ssm.byteLength;
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  let o = 0;
  for (const f of fields) { dv.setUint32(o, f, true); o += 4; }
  for (let i = 0; i < n; i++) { dv.setUint32(o, p.tokens[i], true); o += 4; }
  out.set(new Uint8Array(p.logits.buffer, p.logits.byteOffset, s.nVocab * 4), o); o += s.nVocab * 4;
  for (const l of p.kv) { dv.setUint32(o, n, true); o += 4; out.set(l.k, o); o += l.k.byteLength; out.set(l.v, o); o += l.v.byteLength; }
  for (const r of p.recurrent) { out.set(r.conv, o); o += r.conv.byteLength; out.set(r.ssm, o); o += r.ssm.byteLength; }
  return out;
}

/** Parses and validates a payload against the model shape; every problem is a PayloadError naming it. */
export function decodePayload(s: ModelShape, buf: Uint8Array): PayloadParts {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let o = 0;
  const need = (n: number, what: string) => { if (o + n > buf.byteLength) throw new PayloadError(`truncated: ${what} needs ${n} bytes at offset ${o}, ${buf.byteLength - o} left`); };
  const u32 = (what: string) => { need(4, what); const v = dv.getUint32(o, true); o += 4; return v; };
  if (u32('magic') !== PAYLOAD_MAGIC) throw new PayloadError('bad magic (not a "Q36 " payload)');
  const version = u32('version');
  if (version === 1) throw new PayloadError('version 1 (token-only) payloads are not supported: re-create the cache');
  if (version !== 2 && version !== 3) throw new PayloadError(`unsupported version ${version} (2 and 3 are supported)`);
  const ctx = u32('context size'), chunk = u32('chunk size'), nTokens = u32('token count');
  const fields = { vocab: u32('vocab'), layers: u32('layers'), kvHeads: u32('KV heads'), kDim: u32('key dim'), vDim: u32('value dim'), convW: u32('conv width'), convDim: u32('conv dim'), stateDim: u32('state dim'), dtRank: u32('dt rank') };
  const st = stateSizes(s);
  const expected = { vocab: s.nVocab, layers: s.nLayer, kvHeads: s.nHeadKv, kDim: s.headDim, vDim: s.headDim, convW: s.ssmConv, convDim: st.convCh, stateDim: s.ssmHeadDim, dtRank: s.ssmVHeads };
  for (const k of Object.keys(expected) as (keyof typeof expected)[]) {
    if (fields[k] !== expected[k]) throw new PayloadError(`saved for a different model: ${k} is ${fields[k]}, this model has ${expected[k]}`);
  }
  const kType = version === 3 ? u32('K type') : GgmlType.F16;
  const vType = version === 3 ? u32('V type') : GgmlType.F16;
  for (const t of [kType, vType]) if (![GgmlType.F32, GgmlType.F16, GgmlType.Q8_0, GgmlType.Q4_0].includes(t)) throw new PayloadError(`unknown KV cache type id ${t}`);
  if (nTokens > ctx) throw new PayloadError(`token count ${nTokens} exceeds its context size ${ctx}`);
  need(nTokens * 4, 'token ids');
  const tokens = new Uint32Array(buf.slice(o, o + nTokens * 4).buffer);
  o += nTokens * 4;
  for (const t of tokens) if (t >= s.nVocab) throw new PayloadError(`token id ${t} is outside the vocabulary`);
  need(s.nVocab * 4, 'logits');
  const logits = new Float32Array(buf.slice(o, o + s.nVocab * 4).buffer);
  o += s.nVocab * 4;
  const kRow = rowBytes(kType, st.kvDim), vRow = rowBytes(vType, st.kvDim);
  const kv: PayloadParts['kv'] = [];
  const recurrent: PayloadParts['recurrent'] = [];
  for (let l = 0; l < s.nLayer; l++) {
    if (s.recurrent[l]) continue;
    const rows = u32(`layer ${l} row count`);
    if (rows !== nTokens) throw new PayloadError(`layer ${l} has ${rows} KV rows, expected ${nTokens}`);
    need(rows * (kRow + vRow), `layer ${l} KV rows (${typeName(kType)}/${typeName(vType)})`);
    kv.push({ k: buf.subarray(o, o + rows * kRow), v: buf.subarray(o + rows * kRow, o + rows * (kRow + vRow)) });
    o += rows * (kRow + vRow);
  }
  for (let l = 0; l < s.nLayer; l++) {
    if (!s.recurrent[l]) continue;
    need(st.convBytes + st.ssmBytes, `layer ${l} recurrent state`);
    recurrent.push({ conv: buf.subarray(o, o + st.convBytes), ssm: buf.subarray(o + st.convBytes, o + st.convBytes + st.ssmBytes) });
    o += st.convBytes + st.ssmBytes;
  }
  if (o !== buf.byteLength) throw new PayloadError(`${buf.byteLength - o} unexpected bytes after the last layer`);
  return { ctx, chunk, kType, vType, tokens, logits, kv, recurrent };
}
