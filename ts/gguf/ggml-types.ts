/**
 * ggml tensor types: ids, block geometry, and which ones QuarkStar can compute with.
 *
 * Sizes come from ggml-common.h (see docs of quant-spec §3.0). A type whose size we do not know
 * cannot even be skipped inside a file, so the reader rejects it by name.
 */

export enum GgmlType {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
}

export interface TypeInfo {
  readonly id: number;
  readonly name: string;
  /** elements per block (1 for scalar types) */
  readonly blockElems: number;
  /** bytes per block */
  readonly blockBytes: number;
  /** true when the engine has decoders and dot products for it */
  readonly supported: boolean;
}

const T = (id: number, name: string, blockElems: number, blockBytes: number, supported: boolean): TypeInfo =>
  ({ id, name, blockElems, blockBytes, supported });

const TABLE: TypeInfo[] = [
  T(0, 'F32', 1, 4, true), T(1, 'F16', 1, 2, true), T(2, 'Q4_0', 32, 18, true), T(3, 'Q4_1', 32, 20, true),
  T(6, 'Q5_0', 32, 22, true), T(7, 'Q5_1', 32, 24, true), T(8, 'Q8_0', 32, 34, true), T(9, 'Q8_1', 32, 36, false),
  T(10, 'Q2_K', 256, 84, true), T(11, 'Q3_K', 256, 110, true), T(12, 'Q4_K', 256, 144, true),
  T(13, 'Q5_K', 256, 176, true), T(14, 'Q6_K', 256, 210, true), T(15, 'Q8_K', 256, 292, false),
  T(16, 'IQ2_XXS', 256, 66, true), T(17, 'IQ2_XS', 256, 74, true), T(18, 'IQ3_XXS', 256, 98, true),
  T(19, 'IQ1_S', 256, 50, true), T(20, 'IQ4_NL', 32, 18, true), T(21, 'IQ3_S', 256, 110, true),
  T(22, 'IQ2_S', 256, 82, true), T(23, 'IQ4_XS', 256, 136, true), T(24, 'I8', 1, 1, false),
  T(25, 'I16', 1, 2, false), T(26, 'I32', 1, 4, false), T(27, 'I64', 1, 8, false), T(28, 'F64', 1, 8, false),
  T(29, 'IQ1_M', 256, 56, true), T(30, 'BF16', 1, 2, true), T(34, 'TQ1_0', 256, 54, false),
  T(35, 'TQ2_0', 256, 66, false), T(39, 'MXFP4', 32, 17, false),
];

const BY_ID = new Map<number, TypeInfo>(TABLE.map((t) => [t.id, t]));

/** Type info by ggml id, or undefined for ids we do not know the size of. */
export function typeInfo(id: number): TypeInfo | undefined {
  return BY_ID.get(id);
}

export function typeName(id: number): string {
  return BY_ID.get(id)?.name ?? `type#${id}`;
}

/** Bytes of one row of `n` elements; throws when n is not a whole number of blocks. */
export function rowBytes(id: number, n: number): number {
  const t = BY_ID.get(id);
  if (!t) throw new Error(`unknown ggml type id ${id}`);
  if (n % t.blockElems !== 0) throw new Error(`row of ${n} elements is not a multiple of the ${t.name} block (${t.blockElems})`);
  return (n / t.blockElems) * t.blockBytes;
}

export const ALL_TYPES: readonly TypeInfo[] = TABLE;
