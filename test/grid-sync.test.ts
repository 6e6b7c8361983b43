/**
 * The persistent-kernel probe (grid_sync.comp, ts/engine/vulkan/grid-sync.ts) on lavapipe: a
 * lone workgroup runs its device-wide barriers and every round sees the last one's writes; more
 * workgroups than the device runs at once end the dispatch flagged, never hung and never
 * reported as resident with wrong values.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Pipelines } from '../ts/engine/vulkan/graph.js';
import { gridSync } from '../ts/engine/vulkan/grid-sync.js';
import { loadAddon } from '../ts/vk/addon.js';

const dev = new (loadAddon().Device)(-1);
const pipes = new Pipelines(dev);
afterAll(() => dev.dispose());

describe('grid_sync probe', () => {
  it('one workgroup: resident, 50 rounds each seeing the last', () => {
    const r = gridSync({ dev, pipes, nWG: 1, rounds: 50 });
    expect(r).toMatchObject({ coResident: true, consistent: true });
  });
  it('4096 workgroups: flagged where they do not all run at once, consistent where they do', () => {
    const r = gridSync({ dev, pipes, nWG: 4096, rounds: 3, spinLimit: 2000 });
    // lavapipe runs a few at a time: the dispatch gives up and says so
    if (r.coResident) expect(r.consistent).toBe(true);
    else expect(r.consistent).toBe(false);
    if (dev.info().name.includes('llvmpipe')) expect(r.coResident).toBe(false);
  });
  it('refuses bad arguments by name', () => {
    expect(() => gridSync({ dev, pipes, nWG: 0, rounds: 1 })).toThrow(/0 workgroups/);
    expect(() => gridSync({ dev, pipes, nWG: 1, rounds: -1 })).toThrow(/-1 rounds/);
    expect(() => gridSync({ dev, pipes, nWG: 1, rounds: 1, spinLimit: 70000 })).toThrow(/spin limit 70000/);
  });
});
