#!/usr/bin/env node
/**
 * q36: the QuarkStar command line. Today: `--info` (inspect and validate a GGUF) and
 * `--list-devices` (Vulkan devices). Generation lands with the CPU engine issue.
 */
import * as fs from 'node:fs';
import { defineCommand, runMain } from 'citty';
import { DEFAULT_MODEL } from '../paths.js';
import { runInfo } from './info.js';

const main = defineCommand({
  meta: { name: 'q36', description: 'QuarkStar: Qwen3.6-35B-A3B inference (WASM CPU reference + Vulkan)' },
  args: {
    model: { type: 'string', alias: 'm', description: 'GGUF model file', default: DEFAULT_MODEL },
    info: { type: 'boolean', description: 'print the file\'s layout and model shape, validate it, and exit' },
    'list-devices': { type: 'boolean', description: 'list Vulkan devices and exit' },
    prompt: { type: 'string', alias: 'p', description: 'prompt (generation: not built yet)' },
  },
  async run({ args }) {
    if (args['list-devices']) {
      const { loadAddon } = await import('../vk/addon.js');
      try {
        for (const d of loadAddon().listDevices()) {
          console.log(`${d.index}: ${d.name} (${d.type}) — ${d.driver}, Vulkan ${d.apiVersion}, subgroup ${d.subgroupSize}, ` +
            `${d.unifiedMemory ? 'unified memory' : 'discrete memory'}, heaps ${d.heaps.map((h) => `${(h.size / 2 ** 30).toFixed(1)} GiB${h.deviceLocal ? ' local' : ''}`).join(', ')}`);
        }
      } catch (e) {
        console.error(`q36: ${(e as Error).message}`);
        process.exitCode = 2;
      }
      return;
    }
    if (args.info) {
      if (!fs.existsSync(args.model)) {
        console.error(`q36: model file "${args.model}" not found${args.model === DEFAULT_MODEL ? ' (pass -m FILE; the default model is downloaded into gguf/)' : ''}`);
        process.exitCode = 2;
        return;
      }
      process.exitCode = runInfo(args.model, (s) => console.log(s), (s) => console.error(`q36: ${s}`));
      return;
    }
    console.error('q36: generation is not built yet (CPU engine issue); available now: --info -m FILE, --list-devices');
    process.exitCode = 1;
  },
});

runMain(main);
