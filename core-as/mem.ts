// Bump allocator over linear memory. Regions are 64-byte aligned (cache lines, v128 loads) and
// live until the instance is dropped; growth goes through memory.grow, so the 4 GiB wasm32 limit
// surfaces as alloc returning 0, which JS turns into a clear out-of-memory error.

let top: usize = 0;

export function alloc(bytes: usize): usize {
  if (top == 0) top = (__heap_base + 63) & ~<usize>63;
  const p = top;
  const end = (p + bytes + 63) & ~<usize>63;
  const have = <usize>memory.size() << 16;
  if (end > have) {
    const need = <i32>((end - have + 0xffff) >> 16);
    if (memory.grow(need) < 0) return 0;
  }
  top = end;
  return p;
}

export function heapTop(): usize {
  return top;
}
