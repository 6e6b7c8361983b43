/**
 * Shaders that are not the engine's (experiments, test fixtures): compiled from GLSL with glslc
 * when asked, reflected as scripts/build/build-shaders.mjs reflects the engine's, and added to the addon
 * at run time (addShader), so the shipped addon embeds only what the engine dispatches. Their
 * SPIR-V goes to build/experiments/; each is declared as a KernelDecl by its experiment, and the
 * addon checks every pipeline against the module's own interface as it does the embedded ones.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ROOT } from '../../../ts/paths.js';
import { loadAddon } from '../../../ts/vk/addon.js';
import { pathToFileURL } from 'node:url';

type Reflect = (words: Uint32Array) => { bindings: number; push: number; local: [number, number, number]; counts: number[] };

/** Compiles `dir`/NAME.comp for each name (relative to the repository) and adds the modules to the addon. */
export async function addShaders(dir: string, names: readonly string[]): Promise<void> {
  // build-shaders.mjs's reflection, a plain module beside it (run before any TypeScript is compiled)
  const { reflect } = (await import(pathToFileURL(path.join(ROOT, 'scripts', 'lib', 'spirv-reflect.mjs')).href)) as { reflect: Reflect };
  const src = path.resolve(ROOT, dir), out = path.join(ROOT, 'build', 'experiments', path.basename(dir));
  fs.mkdirSync(out, { recursive: true });
  const addon = loadAddon();
  for (const name of names) {
    const spv = path.join(out, `${name}.spv`);
    try {
      execFileSync('glslc', ['--target-env=vulkan1.2', '-O', '-I', src, '-o', spv, path.join(src, `${name}.comp`)], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      throw new Error(`glslc failed on ${dir}/${name}.comp: ${(e as { stderr?: Buffer }).stderr?.toString().trim() ?? (e as Error).message}`);
    }
    const b = fs.readFileSync(spv);
    const words = new Uint32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    const r = reflect(words);
    addon.addShader(name, words, r.bindings, r.push, r.local, r.counts);
  }
}
