import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's default order, except that the long lavapipe files (minutes of serial decode steps)
 * start first: the other files then run beside them instead of after them.
 */
const FIRST = ['vulkan-prefill-long.test.ts', 'vulkan.test.ts'];
class LongFirst extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = FIRST.findIndex((n) => f.moduleId.endsWith(`/${n}`));
      return i < 0 ? FIRST.length : i;
    };
    return sorted.map((f, i) => [f, i] as const).sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1]).map(([f]) => f);
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Native Vulkan and big WASM memories: keep one worker per file, files in separate forks.
    pool: 'forks',
    sequence: { sequencer: LongFirst },
  },
});
