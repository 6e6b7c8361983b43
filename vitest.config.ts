import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Native Vulkan and big WASM memories: keep one worker per file, files in separate forks.
    pool: 'forks',
  },
});
