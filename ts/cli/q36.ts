#!/usr/bin/env node
/**
 * q36: the QuarkStar command line. Today: `--info`, `--list-devices`, `--dump-tokens`, `--render`.
 * Generation lands with the CPU engine issue.
 */
import * as fs from 'node:fs';
import { defineCommand, runMain } from 'citty';
import { DEFAULT_MODEL } from '../paths.js';
import { dumpTokens } from './dump-tokens.js';
import { runInfo } from './info.js';
import { CliError, loadTokenizer, promptText } from './load-tokenizer.js';
import { renderFromFiles } from './render.js';

const main = defineCommand({
  meta: { name: 'q36', description: 'QuarkStar: Qwen3.6-35B-A3B inference (WASM CPU reference + Vulkan)' },
  args: {
    model: { type: 'string', alias: 'm', description: 'GGUF model file', default: DEFAULT_MODEL },
    prompt: { type: 'string', alias: 'p', description: 'prompt text' },
    'prompt-file': { type: 'string', description: 'read the prompt from a file' },
    info: { type: 'boolean', description: 'print the file\'s layout and model shape, validate it, and exit' },
    'list-devices': { type: 'boolean', description: 'list Vulkan devices and exit' },
    'dump-tokens': { type: 'boolean', description: 'tokenize the prompt, print ids and pieces, and exit (no weights loaded)' },
    json: { type: 'boolean', description: 'with --dump-tokens: print {"ids":[...],"pieces":[...]}' },
    render: { type: 'boolean', description: 'render a conversation with the chat template and print the exact prompt' },
    'messages-file': { type: 'string', description: 'with --render: JSON array of messages (or {"messages","tools"})' },
    'tools-file': { type: 'string', description: 'with --render: JSON array of tools' },
    nothink: { type: 'boolean', description: 'disable thinking (the prompt closes the think block)' },
  },
  async run({ args }) {
    try {
      if (args['list-devices']) {
        const { loadAddon } = await import('../vk/addon.js');
        for (const d of loadAddon().listDevices()) {
          console.log(`${d.index}: ${d.name} (${d.type}) — ${d.driver}, Vulkan ${d.apiVersion}, subgroup ${d.subgroupSize}, ` +
            `${d.unifiedMemory ? 'unified memory' : 'discrete memory'}, heaps ${d.heaps.map((h) => `${(h.size / 2 ** 30).toFixed(1)} GiB${h.deviceLocal ? ' local' : ''}`).join(', ')}`);
        }
        return;
      }
      if (args.info) {
        if (!fs.existsSync(args.model)) throw new CliError(`model file "${args.model}" not found${args.model === DEFAULT_MODEL ? ' (pass -m FILE; see README "The model file")' : ''}`);
        process.exitCode = runInfo(args.model, (s) => console.log(s), (s) => console.error(`q36: ${s}`));
        return;
      }
      if (args['dump-tokens']) {
        const text = promptText(args);
        console.log(dumpTokens(loadTokenizer(args.model), text, Boolean(args.json)));
        return;
      }
      if (args.render) {
        process.stdout.write(renderFromFiles({ messagesFile: args['messages-file'], toolsFile: args['tools-file'], nothink: args.nothink }));
        return;
      }
      throw new CliError('generation is not built yet (CPU engine issue); available now: --info, --list-devices, --dump-tokens, --render', 1);
    } catch (e) {
      if (e instanceof CliError) {
        console.error(`q36: ${e.message}`);
        process.exitCode = e.exitCode;
        return;
      }
      throw e;
    }
  },
});

runMain(main);
