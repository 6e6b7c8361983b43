#!/usr/bin/env node
/**
 * q36: the QuarkStar command line. Modes: the interactive chat, one-shot generation (-p), test
 * vectors (--prompt-ids), --info, --list-devices, --doctor, --dump-tokens, --render; subcommands
 * `download` and `models` (the model store).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readEnv, modelEnv } from './env.js';
import { defineCommand, runMain } from 'citty';
import { metaNumber } from '../gguf/index.js';
import { dumpTokens } from './dump-tokens.js';
import { openEngineForCli, parsePromptIds, runGenerate } from './generate-cmd.js';
import { runInfo } from './info.js';
import { runMtpDump } from './mtp-dump.js';
import { CliError, loadTokenizer, openModelHeader, promptText } from './load-tokenizer.js';
import { ENGINE_ARGS, SAMPLING_ARGS, checkArgs, draftSpec, engineOptions, normalizeArgv, num, parseCli, sampleOptions } from './options.js';
import { renderFromFiles } from './render.js';
import { printVersionIfAsked } from './version.js';
import { runChat } from './chat/chat.js';
import { download, MODELS, progressLine } from './download.js';
import { safeForTerminal } from '../terminal.js';
import { AbortError } from '../engine/common.js';
import { defaultModel, listModels, storeDir } from './model-store.js';
import { optionsHelp, wrapHelp } from './help.js';

const main = defineCommand({
  // (args are checked against this list before parsing: unknown flags are errors)
  meta: { name: 'q36', description: 'QuarkStar: Qwen3.6-35B-A3B inference (WASM CPU reference + Vulkan). Without -p: interactive chat. Also: q36 download q2-imatrix | q2-q4-imatrix | mtp [--base-url URL]' },
  args: {
    model: { type: 'string', alias: 'm', description: 'GGUF model file', default: defaultModel(modelEnv()) },
    prompt: { type: 'string', alias: 'p', description: 'one-shot prompt (rendered with the chat template)' },
    'prompt-file': { type: 'string', description: 'read the prompt from a file' },
    'prompt-ids': { type: 'string', description: 'raw token ids "1,2,3" or @file (no chat template): test-vector mode' },
    n: { type: 'string', description: 'tokens to generate', default: '2048' },
    nothink: { type: 'boolean', description: 'disable thinking (the prompt closes the think block)' },
    ...ENGINE_ARGS,
    ...SAMPLING_ARGS,
    'dump-logits': { type: 'string', description: 'write f32 logits rows (one per prompt position and per generated token) to a file' },
    'dump-mtp-logits': { type: 'string', description: 'with --mtp FILE|auto and --prompt-ids: write the MTP head\'s f32 logits for every position, then two chained draft steps' },
    'dump-logprobs': { type: 'string', description: 'write per-step chosen token and top-K alternatives as JSON' },
    'logprobs-top-k': { type: 'string', description: 'alternatives per step for --dump-logprobs', default: '20' },
    info: { type: 'boolean', description: 'print the file\'s layout and model shape, validate it, and exit' },
    'list-devices': { type: 'boolean', description: 'list Vulkan devices and exit' },
    doctor: { type: 'boolean', description: 'check this machine against the requirements (Vulkan 1.3, RADV, zero-copy import, memory, ttm.pages_limit, subgroups, int8 dot, matrix cores; no model needed) and exit' },
    'dump-tokens': { type: 'boolean', description: 'tokenize the prompt, print ids and pieces, and exit (no weights loaded)' },
    json: { type: 'boolean', description: 'with --dump-tokens: print {"ids":[...],"pieces":[...]}' },
    render: { type: 'boolean', description: 'render a conversation with the chat template and print the exact prompt' },
    'messages-file': { type: 'string', description: 'with --render: JSON array of messages (or {"messages","tools"})' },
    'tools-file': { type: 'string', description: 'with --render: JSON array of tools' },
  },
  async run({ args }) {
    try {
      if (args['list-devices']) {
        const { loadAddon } = await import('../vk/addon.js');
        for (const d of loadAddon().listDevices()) {
          console.log(`${d.index}: ${d.name} (${d.type}) — ${d.driver}, Vulkan ${d.apiVersion}, subgroup ${d.subgroupSize}, ` +
            `${d.unifiedMemory ? 'unified memory' : 'discrete memory'}, heaps ${d.heaps.map((h) => `${(h.size / 2 ** 30).toFixed(1)} GiB${h.deviceLocal ? ' local' : ''}`).join(', ')}, ` +
            `int8 dot ${d.integerDotAccelerated ? 'accelerated' : d.integerDot ? 'emulated' : 'none'}, matrix cores ${d.coopmat ? 'yes' : d.coopmatShapes ? `not usable (${d.coopmatShapes})` : 'none'}`);
        }
        return;
      }
      if (args.doctor) {
        const { doctorChecks, doctorLines, gatherFacts } = await import('./doctor.js');
        const index = num('--vk-device', args['vk-device'], { min: 0, int: true }) ?? readEnv().vkDevice;
        const checks = doctorChecks(await gatherFacts({ index, modelPath: args.model }));
        for (const l of doctorLines(checks)) console.log(l);
        process.exitCode = checks.some((c) => c.verdict === 'fail') ? 1 : 0;
        return;
      }
      if (args.info) {
        openModelHeader(args.model);
        process.exitCode = runInfo(args.model, (s) => console.log(s), (s) => console.error(`q36: ${s}`));
        return;
      }
      if (args['dump-tokens']) {
        console.log(dumpTokens(loadTokenizer(args.model), promptText(args), Boolean(args.json)));
        return;
      }
      if (args.render) {
        process.stdout.write(renderFromFiles({ messagesFile: args['messages-file'], toolsFile: args['tools-file'], nothink: args.nothink }));
        return;
      }
      const maxTokens = num('-n', args.n, { min: 0, int: true })!;
      const sampling = sampleOptions(args);
      const logprobsTopK = num('--logprobs-top-k', args['logprobs-top-k'], { min: 1, int: true })!;
      const ids = args['prompt-ids'];
      const header = openModelHeader(args.model);
      const draft = draftSpec(args, ['ngram'], { mtp: true });
      const eo = engineOptions(args.model, args, metaNumber(header, 'qwen35moe.context_length', 262144), draft);
          if (args['dump-mtp-logits'] !== undefined && args.mtp === undefined) throw new CliError('--dump-mtp-logits needs --mtp FILE|auto');
      if (args['dump-mtp-logits'] !== undefined) {
        if (ids === undefined) throw new CliError('--dump-mtp-logits needs --prompt-ids');
        const engine = await openEngineForCli(eo);
        try {
          process.exitCode = await runMtpDump({ engine, mtp: args.mtp!, ids: parsePromptIds(ids, engine.shape.nVocab), out: args['dump-mtp-logits'], err: (m) => process.stderr.write(`${m}\n`) });
        } finally {
          engine.dispose();
        }
        return;
      }
      if (ids === undefined && args.prompt === undefined && args['prompt-file'] === undefined) {
        process.exitCode = await runChat({
          open: openEngineForCli, engineOptions: eo, sampling, maxTokens, think: args.nothink ? 'off' : 'on', draft,
          input: process.stdin, output: process.stdout,
        });
        return;
      }
      const chatPrompt = ids === undefined ? promptText(args) : undefined;
      const engine = await openEngineForCli(eo);
      const ac = new AbortController();
      process.once('SIGINT', () => ac.abort());
      try {
        process.stderr.write(engine.describe() + '\n');
        process.exitCode = await runGenerate({
          engine, promptIds: ids !== undefined ? parsePromptIds(ids, engine.shape.nVocab) : undefined, chatPrompt,
          nothink: Boolean(args.nothink), maxTokens, sampling, dumpLogits: args['dump-logits'], dumpLogprobs: args['dump-logprobs'],
          logprobsTopK, draft, out: (s) => process.stdout.write(process.stdout.isTTY ? safeForTerminal(s) : s), err: (s) => process.stderr.write(s + '\n'), signal: ac.signal,
        });
      } finally {
        engine.dispose();
      }
    } catch (e) {
      if (e instanceof AbortError) {
        console.error('\nq36: interrupted');
        process.exitCode = 130; // the shell's convention for SIGINT
        return;
      }
      if (e instanceof CliError) {
        console.error(`q36: ${e.message}`);
        process.exitCode = e.exitCode;
        return;
      }
      throw e;
    }
  },
});

async function downloadCommand(argv: string[]): Promise<void> {
  const usage = `usage: q36 download ${Object.keys(MODELS).join(' | ')} [--dir DIR (the model store: Q36_MODELS, ~/.q36/models)] [--base-url URL] [--token HF_TOKEN]   (env: Q36_HF_BASE, HF_TOKEN)`;
  // the flags read by the same rules as every tool's (options.ts parseCli)
  let a;
  try {
    a = parseCli({ dir: { type: 'string' }, 'base-url': { type: 'string' }, token: { type: 'string' } }, { args: argv, positionals: true });
  } catch (e) {
    console.error(`q36: download: ${(e as Error).message}\n${usage}`);
    process.exitCode = 2;
    return;
  }
  const which = a.positionals[0];
  if (!which || a.positionals.length > 1) {
    console.error(a.positionals.length > 1 ? `q36: download: one model at a time (got ${a.positionals.join(', ')})\n${usage}` : usage);
    process.exitCode = 2;
    return;
  }
  // said before a 1 GB download, not after: nothing loads this file yet
  try {
    let last = 0, start: { at: number; done: number } | undefined;
    const env = readEnv();
    const file = await download({
      which, dir: a.values.dir ?? storeDir(env), baseUrl: a.values['base-url'] ?? env.hfBase, token: a.values.token ?? env.hfToken,
      verifying: () => process.stderr.write('\nverifying SHA-256…'),
      progress: (done, total) => {
        const now = Date.now();
        start ??= { at: now, done };
        // a terminal sees the progress line; a pipe only the result
        if (process.stderr.isTTY && (now - last > 500 || done === total)) {
          last = now;
          process.stderr.write(`\r${progressLine(done, total, done - start.done, now - start.at)}   `);
        }
      },
    });
    process.stderr.write('\n');
    console.log(`downloaded ${file}`);
  } catch (e) {
    console.error(`\nq36: ${(e as Error).message}`);
    process.exitCode = 2;
  }
}

/** q36 models: the model files in the store and in ./gguf, with sizes and download names. */
function modelsCommand(argv: string[]): void {
  if (argv.length) { console.error(`q36: models takes no arguments (got ${argv[0]}); the store is Q36_MODELS or ~/.q36/models`); process.exitCode = 2; return; }
  let env;
  try { env = readEnv(); } catch (e) { console.error(`q36: ${(e as Error).message}`); process.exitCode = 2; return; }
  const def = defaultModel(env);
  for (const { dir, models } of listModels(env)) {
    console.log(`${dir}${models.length ? '' : ': no models'}`);
    for (const m of models) {
      console.log(`  ${(m.bytes / 2 ** 30).toFixed(2).padStart(7)} GiB  ${path.basename(m.file)}${m.name ? `  (${m.name})` : ''}${m.partial ? '  [unfinished download: q36 download resumes it]' : ''}${m.file === def ? '  [default]' : ''}`);
    }
  }
  console.log(`default model: ${def}${fs.existsSync(def) ? '' : ' (missing: q36 download q2-imatrix)'}`);
}

const argv = normalizeArgv(process.argv.slice(2));
if (printVersionIfAsked('q36', argv)) {
  // printed
} else if (argv.includes('--help') || argv.includes('-h')) {
  console.log(wrapHelp(`usage: q36 [OPTIONS]\n       q36 download NAME | q36 models | q36 --doctor | q36 --version\n\n${(main.meta as { description: string }).description}\n\n${optionsHelp(main.args as Record<string, { type: string }>)}\n\n-ctk / -ctv are --cache-type-k / --cache-type-v (llama.cpp's spelling). Environment: docs/environment.md.`));
} else if (argv[0] === 'models') {
  modelsCommand(argv.slice(1));
} else if (argv[0] === 'download') {
  void downloadCommand(argv.slice(1));
} else {
  try {
    checkArgs(argv, main.args as Record<string, { type: string; alias?: string }>);
    process.argv = [...process.argv.slice(0, 2), ...argv];
    runMain(main);
  } catch (e) {
    console.error(`q36: ${(e as Error).message}`);
    process.exitCode = 2;
  }
}
