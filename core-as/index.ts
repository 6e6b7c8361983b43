// QuarkStar core (AssemblyScript → WASM): the deterministic CPU reference engine.
// Memory model: JS owns layout. `alloc` hands out 64-byte aligned regions from the linear memory
// (never freed individually: the engine allocates its arenas once), and every kernel takes raw
// pointers, so there is no per-call allocation and no GC.

export { alloc, heapTop } from './mem';
export * from './quant';
export { bpeInit, bpeAddMerge, bpeMerge, bpeWorkBytes } from './bpe';
export { engineConfigure, forward, embedRows, setActivationStats, hiddenRows, mtpInput } from './engine/forward';
export { argmax, sample, rngNext } from './sampler';
