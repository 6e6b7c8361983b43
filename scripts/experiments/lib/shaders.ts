/**
 * Experiments' own shaders: `dir`/NAME.comp compiled and added to the addon at run time
 * (scripts/lib/runtime-shaders.ts); each is declared as a KernelDecl by its experiment.
 */
import { addModules } from '../../lib/runtime-shaders.js';

/** Compiles `dir`/NAME.comp for each name (relative to the repository) and adds the modules to the addon. */
export async function addShaders(dir: string, names: readonly string[]): Promise<void> {
  await addModules(names.map((name) => ({ name, source: `${dir}/${name}.comp` })));
}
