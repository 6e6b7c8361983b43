/**
 * `--version` for every command: the package's version, printed before anything else is parsed
 * (a version request with other flags still only prints the version, as git and node do).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ROOT } from '../paths.js';

export function packageVersion(): string {
  try { return String(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version ?? 'unknown'); } catch { return 'unknown'; }
}

/** True (after printing "TOOL VERSION") when the command line asks for the version. */
export function printVersionIfAsked(tool: string, argv: string[] = process.argv.slice(2)): boolean {
  if (!argv.includes('--version')) return false;
  console.log(`${tool} ${packageVersion()} (QuarkStar)`);
  return true;
}
