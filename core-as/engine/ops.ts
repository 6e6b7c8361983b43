// Small vector operations of the forward pass. Reductions accumulate in f64 so the reference
// stays close to the float64 oracle; elementwise math is f32.

// @ts-ignore: decorator
@inline export function ld(p: usize, i: i32): f32 { return load<f32>(p + (<usize>i << 2)); }
// @ts-ignore: decorator
@inline export function st(p: usize, i: i32, v: f32): void { store<f32>(p + (<usize>i << 2), v); }
// @ts-ignore: decorator
@inline export function fptr(p: usize, i: i32): usize { return p + (<usize>i << 2); }

export function sigmoid(x: f32): f32 {
  return <f32>1 / (<f32>1 + Mathf.exp(-x));
}

export function silu(x: f32): f32 {
  return x * sigmoid(x);
}

/** log(1 + e^x), linear above 20 like torch's softplus. */
export function softplus(x: f32): f32 {
  return x > <f32>20 ? x : <f32>Math.log1p(Math.exp(<f64>x));
}

/** out = x / sqrt(mean(x²) + eps) ⊙ w (w may be 0: no weight). out may alias x. */
export function rmsnorm(out: usize, x: usize, w: usize, n: i32, eps: f32): void {
  let ss: f64 = 0;
  for (let i = 0; i < n; i++) { const v = <f64>ld(x, i); ss += v * v; }
  const r = <f32>(1.0 / Math.sqrt(ss / <f64>n + <f64>eps));
  if (w) for (let i = 0; i < n; i++) st(out, i, ld(x, i) * r * ld(w, i));
  else for (let i = 0; i < n; i++) st(out, i, ld(x, i) * r);
}

/** x ← x / sqrt(Σx² + eps) (the L2 norm of FLA/HF's Gated DeltaNet), then × scale. */
export function l2norm(x: usize, n: i32, eps: f32, scale: f32): void {
  let ss: f64 = 0;
  for (let i = 0; i < n; i++) { const v = <f64>ld(x, i); ss += v * v; }
  const r = <f32>(1.0 / Math.sqrt(ss + <f64>eps)) * scale;
  for (let i = 0; i < n; i++) st(x, i, ld(x, i) * r);
}

/** In-place softmax over n values; returns nothing, sums in f64. */
export function softmax(x: usize, n: i32): void {
  let m = ld(x, 0);
  for (let i = 1; i < n; i++) m = max(m, ld(x, i));
  let s: f64 = 0;
  for (let i = 0; i < n; i++) { const e = Mathf.exp(ld(x, i) - m); st(x, i, e); s += <f64>e; }
  const inv = <f32>(1.0 / s);
  for (let i = 0; i < n; i++) st(x, i, ld(x, i) * inv);
}

/** NeoX rotary embedding on the first nRot dims of a head: pairs (i, i + nRot/2). Angles in f64. */
export function rope(x: usize, nRot: i32, pos: i32, theta: f64): void {
  const half = nRot >> 1;
  for (let i = 0; i < half; i++) {
    const freq = Math.pow(theta, -2.0 * <f64>i / <f64>nRot);
    const a = <f64>pos * freq;
    const c = <f32>Math.cos(a), s = <f32>Math.sin(a);
    const x0 = ld(x, i), x1 = ld(x, i + half);
    st(x, i, x0 * c - x1 * s);
    st(x, i + half, x1 * c + x0 * s);
  }
}

/** y += a·x over n floats (v128). */
export function axpy(y: usize, a: f32, x: usize, n: i32): void {
  const av = f32x4.splat(a);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(y + o, f32x4.add(v128.load(y + o), f32x4.mul(av, v128.load(x + o))));
  }
  for (; i < n; i++) st(y, i, ld(y, i) + a * ld(x, i));
}

/** y += x over n floats. */
export function addInto(y: usize, x: usize, n: i32): void {
  axpy(y, 1, x, n);
}

/** Steering edit y ← y − s·d·(d·y) (d a unit direction). */
export function steer(y: usize, d: usize, s: f32, n: i32): void {
  let dot: f64 = 0;
  for (let i = 0; i < n; i++) dot += <f64>ld(d, i) * <f64>ld(y, i);
  axpy(y, -s * <f32>dot, d, n);
}
