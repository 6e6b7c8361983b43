/** GGUF metadata value types (gguf.h `enum gguf_type`) and their in-memory representation. */

export enum GgufValueType {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
}

/** Fixed byte sizes of the scalar value types (STRING and ARRAY are variable). */
export const SCALAR_SIZE: Partial<Record<GgufValueType, number>> = {
  [GgufValueType.UINT8]: 1, [GgufValueType.INT8]: 1, [GgufValueType.UINT16]: 2, [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4, [GgufValueType.INT32]: 4, [GgufValueType.FLOAT32]: 4, [GgufValueType.BOOL]: 1,
  [GgufValueType.UINT64]: 8, [GgufValueType.INT64]: 8, [GgufValueType.FLOAT64]: 8,
};

export type GgufArray =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array
  | Float64Array | BigUint64Array | BigInt64Array | boolean[] | string[];

export type GgufScalar = number | bigint | boolean | string;

/** One metadata value with its on-disk type (needed to write it back unchanged). */
export type GgufValue =
  | { type: Exclude<GgufValueType, GgufValueType.ARRAY>; value: GgufScalar }
  | { type: GgufValueType.ARRAY; elemType: Exclude<GgufValueType, GgufValueType.ARRAY>; value: GgufArray };

export function valueTypeName(t: number): string {
  return GgufValueType[t] ?? `type#${t}`;
}

/** Helpers to build typed metadata values for the writer. */
export const kv = {
  u8: (v: number): GgufValue => ({ type: GgufValueType.UINT8, value: v }),
  u32: (v: number): GgufValue => ({ type: GgufValueType.UINT32, value: v }),
  i32: (v: number): GgufValue => ({ type: GgufValueType.INT32, value: v }),
  u64: (v: number | bigint): GgufValue => ({ type: GgufValueType.UINT64, value: BigInt(v) }),
  f32: (v: number): GgufValue => ({ type: GgufValueType.FLOAT32, value: v }),
  f64: (v: number): GgufValue => ({ type: GgufValueType.FLOAT64, value: v }),
  bool: (v: boolean): GgufValue => ({ type: GgufValueType.BOOL, value: v }),
  str: (v: string): GgufValue => ({ type: GgufValueType.STRING, value: v }),
  strs: (v: string[]): GgufValue => ({ type: GgufValueType.ARRAY, elemType: GgufValueType.STRING, value: v }),
  i32s: (v: ArrayLike<number>): GgufValue => ({ type: GgufValueType.ARRAY, elemType: GgufValueType.INT32, value: Int32Array.from(v) }),
  u32s: (v: ArrayLike<number>): GgufValue => ({ type: GgufValueType.ARRAY, elemType: GgufValueType.UINT32, value: Uint32Array.from(v) }),
  f32s: (v: ArrayLike<number>): GgufValue => ({ type: GgufValueType.ARRAY, elemType: GgufValueType.FLOAT32, value: Float32Array.from(v) }),
  bools: (v: boolean[]): GgufValue => ({ type: GgufValueType.ARRAY, elemType: GgufValueType.BOOL, value: v }),
};
