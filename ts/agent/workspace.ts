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
    const abs = path.resolve(this.root, p);
    // the deepest existing ancestor's real path decides where the path leads (symlinks included)
    let probe = abs, rest = '';
    while (!fs.existsSync(probe) && path.dirname(probe) !== probe) { rest = path.join(path.basename(probe), rest); probe = path.dirname(probe); }
    const real = path.join(fs.realpathSync(probe), rest);
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
