/** openEngine: the one entry point to a loaded model, whatever the backend. */
import { CpuEngine } from './cpu/cpu-engine.js';
import type { Engine, EngineOptions } from './types.js';

export * from './types.js';

export async function openEngine(o: EngineOptions): Promise<Engine> {
  switch (o.backend) {
    case 'cpu':
      return new CpuEngine(o);
    case 'vulkan': {
      const { VkEngine } = await import('./vulkan/vk-engine.js');
      const e = new VkEngine(o);
      try { await e.ready(); } catch (err) { e.dispose(); throw err; }
      return e;
    }
    default:
      throw new Error(`unknown backend "${(o as { backend: string }).backend}"`);
  }
}
