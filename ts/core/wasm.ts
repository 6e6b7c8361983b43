/**
 * Loads the AssemblyScript core (build/core.wasm). One instance per engine: its linear memory is the
 * CPU engine's whole address space (≤ 4 GiB, wasm32).
 */
import * as fs from 'node:fs';
import { WASM_PATH } from '../paths.js';

export interface CoreExports {
  memory: WebAssembly.Memory;
  alloc(bytes: number): number;
  heapTop(): number;
  [name: string]: unknown;
}

let compiled: WebAssembly.Module | undefined;

function module(): WebAssembly.Module {
  if (!compiled) {
    if (!fs.existsSync(WASM_PATH)) throw new Error(`${WASM_PATH} is missing: run "npm run build" first`);
    compiled = new WebAssembly.Module(fs.readFileSync(WASM_PATH));
  }
  return compiled;
}

/** Functions the forward pass calls back into JS. */
export interface CoreImports {
  /** make experts `ids[0..n)` of `layer` resident and set their expert-table entries */
  ensureExperts?: (layer: number, ids: number, n: number) => void;
}

export class Core {
  readonly x: CoreExports;
  constructor(imports: CoreImports = {}) {
    const inst = new WebAssembly.Instance(module(), {
      env: {
        abort: (_msg: number, _file: number, line: number, col: number) => {
          throw new Error(`core.wasm aborted at ${line}:${col}`);
        },
        ensureExperts: imports.ensureExperts ?? (() => { throw new Error('core.wasm: no expert loader attached'); }),
      },
    });
    this.x = inst.exports as unknown as CoreExports;
  }

  get memory(): WebAssembly.Memory {
    return this.x.memory;
  }

  /** 64-byte aligned region that lives as long as this instance; throws when wasm32 memory is exhausted. */
  alloc(bytes: number): number {
    const p = this.x.alloc(bytes) >>> 0;
    if (p === 0) throw new Error(`out of WASM memory: cannot allocate ${bytes} bytes (heap at ${(this.x.heapTop() >>> 0) / 2 ** 20} MiB, limit 4 GiB)`);
    return p;
  }

  /** Views are recreated on every call: memory.grow detaches old ArrayBuffers. */
  u8(ptr: number, len: number): Uint8Array { return new Uint8Array(this.x.memory.buffer, ptr, len); }
  f32(ptr: number, len: number): Float32Array { return new Float32Array(this.x.memory.buffer, ptr, len); }
  i32(ptr: number, len: number): Int32Array { return new Int32Array(this.x.memory.buffer, ptr, len); }
}
