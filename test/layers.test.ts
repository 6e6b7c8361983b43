/**
 * The source tree's layering, read from the import statements of ts/: the libraries (formats,
 * model, tokenizer, chat, engines) import no front end; front ends do not import each other
 * (a shared piece moves below them); and no files import each other in a circle.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve('ts');
function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(path.join(dir, d.name)) : d.name.endsWith('.ts') ? [path.join(dir, d.name)] : []));
}
/** file (relative to ts/) → the ts/ files it imports (type-only imports included: they tie the layers too) */
const graph = new Map<string, string[]>();
for (const f of files(ROOT)) {
  const src = fs.readFileSync(f, 'utf8');
  const deps = [...src.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/g)].map((m) => path.relative(ROOT, path.resolve(path.dirname(f), m[1].replace(/\.js$/, '.ts'))));
  graph.set(path.relative(ROOT, f), deps.filter((d) => !d.startsWith('..')));
}
const top = (f: string) => (f.includes(path.sep) ? f.split(path.sep)[0] : '');

// what each part of ts/ may not import
const FRONT_ENDS = ['cli', 'server', 'agent', 'eval', 'bench'];
const FORBIDDEN: Record<string, string[]> = {
  gguf: [...FRONT_ENDS, 'quantize'], model: [...FRONT_ENDS, 'quantize'], tokenizer: [...FRONT_ENDS, 'quantize'], chat: [...FRONT_ENDS, 'quantize'],
  engine: [...FRONT_ENDS, 'quantize'], vk: [...FRONT_ENDS, 'quantize'], core: [...FRONT_ENDS, 'quantize'], kvc: [...FRONT_ENDS, 'quantize'],
  quantize: FRONT_ENDS, server: ['cli', 'agent', 'eval', 'bench'], agent: ['cli', 'server', 'eval', 'bench'], eval: ['cli', 'server', 'agent', 'bench'],
  '': FRONT_ENDS,
};

describe('the layering of ts/', () => {
  it('reads a sizeable import graph', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get(path.join('server', 'coordinator.ts'))).toContain(path.join('chat', 'answer.ts'));
  });
  it('no part imports a layer above it or a sibling front end', () => {
    const bad: string[] = [];
    for (const [f, deps] of graph) for (const d of deps) if ((FORBIDDEN[top(f)] ?? []).includes(top(d))) bad.push(`${f} → ${d}`);
    expect(bad).toEqual([]);
  });
  it('no import cycles', () => {
    const state = new Map<string, 1 | 2>(), cycles: string[] = [];
    const visit = (f: string, stack: string[]) => {
      state.set(f, 1);
      for (const d of graph.get(f) ?? []) {
        if (state.get(d) === 1) cycles.push([...stack.slice(stack.indexOf(d)), d].join(' → '));
        else if (!state.has(d)) visit(d, [...stack, d]);
      }
      state.set(f, 2);
    };
    for (const f of graph.keys()) if (!state.has(f)) visit(f, [f]);
    expect(cycles).toEqual([]);
  });
});
