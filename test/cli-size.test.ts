/** Byte sizes on the command line (ts/cli/size.ts): units as ls -h and llama.cpp read them; bad ones name the flag. */
import { describe, expect, it } from 'vitest';
import { parseSize } from '../ts/cli/size.js';

describe('parseSize', () => {
  it('reads decimal and binary units and bare bytes', () => {
    expect(parseSize('--x', '16GiB')).toBe(16 * 2 ** 30);
    expect(parseSize('--x', '16G')).toBe(16 * 2 ** 30);
    expect(parseSize('--x', '16GB')).toBe(16e9);
    expect(parseSize('--x', '512MB')).toBe(512e6);
    expect(parseSize('--x', '512m')).toBe(512 * 2 ** 20);
    expect(parseSize('--x', '1.5 GiB')).toBe(1.5 * 2 ** 30);
    expect(parseSize('--x', '4096')).toBe(4096);
    expect(parseSize('--x', undefined)).toBeUndefined();
  });
  it('refuses what is not a size, naming the flag', () => {
    for (const bad of ['', 'lots', '16XB', '-1G', '0', '1e9', 'GB']) expect(() => parseSize('--vk-memory-limit', bad)).toThrow(/--vk-memory-limit/);
  });
});
