/**
 * Single-precision arithmetic as C compiles it (no FMA contraction): every operation is a double
 * operation rounded to float, which is exactly the IEEE float result for + − × ÷ and sqrt. The
 * quantizers below must reproduce llama.cpp's bytes, so each intermediate is rounded where C
 * rounds it; an expression `a*b + c` in C is `add(mul(a, b), c)` here, never one double sum.
 */
export const f = Math.fround;

/** C's `nearest_int`: adds 1.5·2^23 in float, so halves round to even (|x| < 2^22). */
export function nearestInt(x: number): number {
  return f(x + 12582912) - 12582912;
}

/** C's roundf: halves away from zero. */
export function roundAway(x: number): number {
  return x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
}

export const F_0_1 = f(0.1);
export const F_0_05 = f(0.05);
export const F_M0_9 = f(-0.9);
export const F_M0_5 = f(-0.5);
/** GROUP_MAX_EPS in ggml-quants.c */
export const GROUP_MAX_EPS = f(1e-15);

/** a·b + c with both operations rounded, as C evaluates `a*b + c` (llama.cpp's build does not fuse). */
export function mad(a: number, b: number, c: number): number {
  return f(f(a * b) + c);
}

/** Σ x² over n values from xo, summed in order in f32 (the blocks' sigma² in ggml-quants.c). */
export function sumSquares(x: Float32Array, xo: number, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s = f(s + f(x[xo + i] * x[xo + i]));
  return s;
}

/** The importance of one value under an imatrix, as every ggml quantizer weights it: qw·√(σ² + x²). */
export function importance(qw: number, sigma2: number, x: number): number {
  return f(qw * f(Math.sqrt(f(sigma2 + f(x * x)))));
}
