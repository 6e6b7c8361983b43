/** Where the package's own files are, whether running from ts/ (vitest, tsx) or dist/ts/ (built). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'core-as'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('QuarkStar: cannot find the package root (package.json next to core-as/)');
}

export const ROOT = findRoot();
export const WASM_PATH = path.join(ROOT, 'build', 'core.wasm');
export const ADDON_PATH = path.join(ROOT, 'native-vk', 'build', 'Release', 'q36vk.node');
