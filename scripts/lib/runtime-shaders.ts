/**
 * Modules that are not the engine's (experiments, test fixtures, checks of other builds of the
 * engine's kernels): compiled from GLSL with glslc when asked, reflected as
 * scripts/build/build-shaders.mjs reflects the engine's, and added to the addon at run time
 * (addShader), so the shipped addon embeds only what the engine dispatches. Their SPIR-V goes to
 * build/runtime-shaders/; the addon checks every pipeline against the module's own interface as it
 * does the embedded ones.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../../ts/paths.js';
import { loadAddon, type VkDevice } from '../../ts/vk/addon.js';

type Reflect = (words: Uint32Array) => { bindings: number; push: number; local: [number, number, number]; counts: number[] };

export interface RuntimeModule {
  /** the name pipelines ask for (not an embedded module's) */
  name: string;
  /** the .comp file, relative to the repository */
  source: string;
  /** -D definitions (NAME or NAME=VALUE) */
  defines?: readonly string[];
}

/**
 * For the checks that build the matrix-unit kernels at 8 × 8 × 8 (mmc-check, attn-mmc-check
 * --fragment 8): the glslc that compiles GL_KHR_cooperative_matrix, once the device is seen to
 * list that shape at 8-, 16- or 32-lane subgroups; otherwise `tool` exits 2 saying which is missing.
 */
export function smallFragmentCompiler(tool: string, info: ReturnType<VkDevice['info']>): string {
  if (!info.cooperativeMatrix || ![8, 16, 32].includes(info.subgroupSize) || !info.coopmatShapes.includes('8x8x8 f16,f16->f32')) {
    console.error(`${tool}: ${info.name} lists no 8x8x8 f16->f32 products at 8-, 16- or 32-lane subgroups (${info.coopmatShapes || 'no shapes'}; subgroup ${info.subgroupSize})`);
    process.exit(2);
  }
  const glslc = execFileSync('bash', ['scripts/build/glslc-coopmat.sh'], { cwd: ROOT, encoding: 'utf8' }).trim();
  if (!glslc) { console.error(`${tool}: no glslc here compiles GL_KHR_cooperative_matrix (scripts/build/glslc-coopmat.sh)`); process.exit(2); }
  return glslc;
}

/** Compiles each module with `glslc` (a path or a command; default the system's) and adds it to the addon. */
export async function addModules(modules: readonly RuntimeModule[], glslc = 'glslc'): Promise<void> {
  const out = path.join(ROOT, 'build', 'runtime-shaders');
  fs.mkdirSync(out, { recursive: true });
  const cmd = glslc.includes('/') ? path.resolve(ROOT, glslc) : glslc;
  for (const m of modules) {
    const src = path.resolve(ROOT, m.source), spv = path.join(out, `${m.name}.spv`);
    try {
      execFileSync(cmd, ['--target-env=vulkan1.2', '-O', '-I', path.dirname(src), '-I', path.join(ROOT, 'shaders'), ...(m.defines ?? []).map((d) => `-D${d}`), '-o', spv, src], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      throw new Error(`glslc failed on ${m.source} (${m.name}): ${(e as { stderr?: Buffer }).stderr?.toString().trim() ?? (e as Error).message}`);
    }
    await addSpv(m.name, spv);
  }
}

/**
 * Adds a module already compiled (a .spv file) under `name`, reflected by build-shaders.mjs's
 * reflection (a plain module beside this one: it runs before any TypeScript is compiled).
 */
export async function addSpv(name: string, spv: string): Promise<void> {
  const { reflect } = (await import(pathToFileURL(path.join(ROOT, 'scripts', 'lib', 'spirv-reflect.mjs')).href)) as { reflect: Reflect };
  const b = fs.readFileSync(spv);
  const words = new Uint32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  const r = reflect(words);
  loadAddon().addShader(name, words, r.bindings, r.push, r.local, r.counts);
}
