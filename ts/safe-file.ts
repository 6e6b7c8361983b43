/**
 * Files opened so that what sits at a path cannot redirect or stall the program: temp files under
 * names nobody can predict, created exclusively and never through a link (a planted symlink at a
 * predictable `X.tmp` made every writer overwrite the link's target); reads that refuse anything
 * but a regular file (a `*.kv` symlink led the cache out of its folder, a FIFO blocked the thread
 * that opened it forever); writes that fail when the disk takes less than all of the bytes.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';

const C = fs.constants;

/**
 * A new temp file beside `finalPath` (`finalPath.<random>.tmp`), created with O_EXCL and
 * O_NOFOLLOW: it is a fresh regular file of ours, or the call throws. Rename it over finalPath
 * when complete.
 */
export function createTemp(finalPath: string, mode = 0o644): { fd: number; tmp: string } {
  const tmp = `${finalPath}.${randomBytes(8).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, mode);
  return { fd, tmp };
}

/** Writes all of `bytes` at `position` (or the current offset), or throws: a full disk is an error, not a short file. */
export function writeAll(fd: number, bytes: Uint8Array, position?: number): void {
  let done = 0;
  while (done < bytes.byteLength) {
    const n = fs.writeSync(fd, bytes, done, bytes.byteLength - done, position === undefined ? null : position + done);
    if (n <= 0) throw Object.assign(new Error(`write stopped after ${done} of ${bytes.byteLength} bytes (disk full?)`), { code: 'ENOSPC' });
    done += n;
  }
}

/** Writes `data` to `file` through a createTemp file and a rename: a crash leaves the old file or the new one, never a mix. */
export function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o644): void {
  const { fd, tmp } = createTemp(file, mode);
  try {
    try {
      writeAll(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/** Why `file` is not a plain file to read (lstat: a symlink, FIFO, socket, device or folder), or undefined. */
export function notRegular(st: fs.Stats): string | undefined {
  if (st.isFile()) return undefined;
  const kind = st.isSymbolicLink() ? 'a symbolic link' : st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : st.isDirectory() ? 'a directory' : 'a device';
  return `not a regular file (${kind})`;
}

/**
 * Opens a regular file for reading (or 'r+' updating) without following a final symlink and
 * without blocking on a FIFO; anything but a regular file throws with code ENOTREG naming what it is.
 */
export function openRegular(file: string, write = false): number {
  const fd = fs.openSync(file, (write ? C.O_RDWR : C.O_RDONLY) | C.O_NOFOLLOW | C.O_NONBLOCK);
  try {
    const st = fs.fstatSync(fd), why = notRegular(st);
    if (why) throw Object.assign(new Error(`${file}: ${why}`), { code: st.isDirectory() ? 'EISDIR' : 'ENOTREG' });
    return fd;
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/** The whole of a regular file (openRegular's checks), read through its descriptor. */
export function readRegular(file: string): Buffer {
  const fd = openRegular(file);
  try {
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
