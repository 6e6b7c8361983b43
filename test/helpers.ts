import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const FIXTURES = path.resolve(__dirname, '..', 'fixtures');
export const fixture = (...p: string[]) => path.join(FIXTURES, ...p);

export function tmpDir(prefix = 'q36-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export const ORACLE_GGUFS = [
  'tinyA/tinyA-bf16.gguf', 'tinyA/tinyA-q8_0.gguf', 'tinyA/tinyA-q2.gguf', 'tinyA/tinyA-q2q4.gguf',
  'tinyR/tinyR-bf16.gguf', 'tinyR/tinyR-q2.gguf',
];
