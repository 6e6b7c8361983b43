/**
 * Byte sizes on the command line (--vk-memory-limit, and the SSD-streaming cache sizes to come):
 * a number with a unit. KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB and K/M/G/T powers of
 * 1024 (as ls -h and llama.cpp read them); a bare number is bytes. Anything else is an error
 * naming the flag.
 */
import { CliError } from './load-tokenizer.js';

const UNITS: Record<string, number> = {
  '': 1, b: 1,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
};

/** A size for people: GiB with two decimals from 1 GiB up, else MiB with one. */
export function formatSize(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

export function parseSize(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(v);
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new CliError(`${flag} expects a size such as 16GiB, 512MB or 2G (got "${v}")`);
  const bytes = Math.floor(Number(m[1]) * unit);
  if (!(bytes > 0)) throw new CliError(`${flag} must be more than 0 bytes (got "${v}")`);
  return bytes;
}
