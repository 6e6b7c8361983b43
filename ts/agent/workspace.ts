/**
 * The agent's workspace: paths are resolved inside it, symlinks are followed only to where they
 * really lead, and anything outside asks for confirmation (or is refused) — never silently.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export class ToolError extends Error {}

export interface WorkspaceOptions {
  root: string;
  /** asked before touching a path outside the workspace, or running a shell command; true = go */
  confirm: (what: string) => Promise<boolean>;
  /** --yes: everything confirmed */
  yes?: boolean;
}

export class Workspace {
  readonly root: string;
  constructor(private readonly o: WorkspaceOptions) {
    this.root = fs.realpathSync(o.root);
  }

  /** The real path of p (relative to the root), confirmed when it lies outside the workspace. */
  async resolve(p: unknown, verb: string): Promise<string> {
    if (typeof p !== 'string' || !p) throw new ToolError('path must be a non-empty string');
    // where the path really leads, link by link: a dangling link counts as its target (a write
    // through it creates the target), and `..` after a link climbs from where the link led
    const real = path.isAbsolute(p) ? follow(path.parse(p).root, p, 0) : follow(this.root, p, 0);
    if (!this.inside(real) && !(await this.ok(`${verb} ${real} (outside the workspace ${this.root})`))) {
      throw new ToolError(`${verb} ${p}: ${real} is outside the workspace ${this.root} and was not confirmed`);
    }
    return real;
  }

  inside(real: string): boolean {
    const rel = path.relative(this.root, real);
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  }

  async ok(what: string): Promise<boolean> {
    return this.o.yes === true || (await this.o.confirm(what));
  }
}

/** Symbolic links followed at most (as the kernel's limit). */
const MAX_LINKS = 40;

/**
 * The real path `rel` leads to from the real directory `from`, resolving each component as the
 * kernel does: links (dangling ones too) replaced by their targets, `..` taken after them; the
 * components past the first that does not exist are taken as written.
 */
function follow(from: string, rel: string, links: number): string {
  let cur = from;
  const parts = rel.split(path.sep);
  for (let i = 0; i < parts.length; i++) {
    const c = parts[i];
    if (c === '' || c === '.') continue;
    if (c === '..') { cur = path.dirname(cur); continue; }
    const next = path.join(cur, c);
    let st: fs.Stats;
    try { st = fs.lstatSync(next); } catch { return path.resolve(next, ...parts.slice(i + 1)); }
    if (!st.isSymbolicLink()) { cur = next; continue; }
    if (links >= MAX_LINKS) throw new ToolError(`${next}: more than ${MAX_LINKS} symbolic links`);
    const target = fs.readlinkSync(next);
    cur = follow(path.isAbsolute(target) ? path.parse(target).root : cur, target, links + 1);
  }
  return cur;
}
