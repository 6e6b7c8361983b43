/**
 * The SSD-streaming cache policy (expert-cache.ts), on hand-worked sequences: LRU eviction that
 * never takes a pinned expert, prefill loads into a full cache evicted first (so a sweep over
 * more experts than fit keeps part of the cache instead of missing everything, LRU's worst
 * case), slot classes that evict only among their own slots, slots freed by a failed read, and
 * the split of a cache between slot classes.
 */
import { describe, expect, it } from 'vitest';
import { ExpertCache } from '../ts/engine/expert-cache.js';
import { splitSlots } from '../ts/engine/vulkan/expert-stream.js';

const cache = (slots: number | number[], classOf?: (l: number) => number) => new ExpertCache({ nLayer: 4, nExpert: 6, slots, classOf, fullLayers: 0 });

describe('expert cache policy', () => {
  it('LRU: a hit refreshes, the least recently used unpinned expert goes, all of a step\'s experts stay', () => {
    const c = cache(3);
    expect(c.plan(0, [1, 2]).slots).toEqual([0, 1]);
    expect(c.plan(1, [4]).slots).toEqual([2]);
    expect(c.plan(0, [1]).loads).toEqual([]); // hit: (0,1) is now the most recent
    // (0,2) is the least recently used: its slot 1 goes to (2,5)
    const p = c.plan(2, [5]);
    expect(p.slots).toEqual([1]);
    expect(p.loads).toEqual([{ layer: 2, e: 5, slot: 1 }]);
    expect(c.stats).toMatchObject({ hits: 1, misses: 4 });
    // a step's own experts are pinned: 3 of them fill the 3 slots whatever their age
    expect(c.plan(3, [0, 1, 2]).slots!.sort()).toEqual([0, 1, 2]);
    expect(() => c.plan(3, [0, 1, 2, 3])).toThrow(/3 slots cannot hold the 4 experts one step needs/);
  });

  it('a prefill sweeping more experts than fit keeps a part cached (transient loads go first); plain LRU misses everything', () => {
    const sweep = (c: ExpertCache, transient: boolean) => { for (let l = 0; l < 3; l++) c.plan(l, [0, 1], transient); };
    for (const transient of [true, false]) {
      const c = cache(4);
      sweep(c, transient);
      const h0 = c.stats.hits;
      sweep(c, transient); sweep(c, transient);
      // 3 layers × 2 experts through 4 slots: layer 1's pair stays (2 hits per sweep) with
      // transient loads; LRU evicts each layer just before its next use
      expect(c.stats.hits - h0).toBe(transient ? 4 : 0);
    }
  });

  it('slot classes evict only among their own slots, numbered class after class', () => {
    const c = cache([2, 1], (l) => (l === 3 ? 1 : 0));
    expect(c.plan(3, [5]).slots).toEqual([2]);
    expect(c.plan(0, [1, 2]).slots).toEqual([0, 1]);
    // layer 3's class has one slot: (3,4) takes it from (3,5), not from layer 0's class
    expect(c.plan(3, [4]).loads).toEqual([{ layer: 3, e: 4, slot: 2 }]);
    expect(c.plan(0, [1, 2]).loads).toEqual([]);
  });

  it('a failed read frees its slots: the expert is not taken as cached', () => {
    const c = cache(2);
    const p = c.plan(0, [3, 4]);
    c.failed(p.loads);
    const again = c.plan(0, [3, 4]);
    expect(again.loads.map((x) => x.e)).toEqual([3, 4]);
    expect(c.stats.misses).toBe(4);
  });

  it('splits a cache between slot sizes: one layer\'s worth each first, the rest by the experts\' bytes, none beyond all', () => {
    const classes = [{ slotBytes: 100, layers: [0, 1, 2] }, { slotBytes: 200, layers: [3] }];
    // 23 slots: 6 + 6 first; the 6-expert class is then full, the other takes the 11 left
    expect(splitSlots(classes, 6, 6, { slots: 23 })).toEqual([17, 6]);
    // bytes: 6·100 + 6·200 = 1800 first; the 1200 left all go to the class with room (12 more)
    expect(splitSlots(classes, 6, 6, { bytes: 3000 })).toEqual([18, 6]);
    // two classes with room: 600 left shared 1800 : 2400 → 2.57 slots of 100 and 1.71 of 200,
    // rounded down (2 and 1: 400 spent), the 200 left as whole slots in class order (2 of 100)
    const two = [{ slotBytes: 100, layers: [0, 1, 2] }, { slotBytes: 200, layers: [3, 4] }];
    expect(splitSlots(two, 6, 6, { bytes: 2400 })).toEqual([10, 7]);
    // too little for one layer's worth of each: the proportional split (the engine then refuses or goes uniform)
    expect(splitSlots(classes, 6, 6, { bytes: 1000 })).toEqual([6, 2]);
    expect(splitSlots(classes, 6, 6, { slots: 1000 })).toEqual([18, 6]);
  });
});
