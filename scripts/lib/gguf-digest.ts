/** sha256 digests of a GGUF's tensors and metadata values (oracle fixtures and their tests). */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { readGguf, readTensorBytes, typeName, type GgufValue } from '../../ts/gguf/index.js';

export interface TensorDigest { name: string; type: string; shape: number[]; sha256: string }
export interface FileDigest {
  size: number;
  sha256: string;
  metadataOrder: string[];
  metadata: Record<string, { type: number; value: string }>;
  tensors: TensorDigest[];
}

const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

export function valueDigest(v: GgufValue): string {
  return sha(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : ArrayBuffer.isView(x) ? Array.from(x as unknown as ArrayLike<number>) : x)));
}

export function digestGguf(file: string): FileDigest {
  const g = readGguf(file);
  const fd = fs.openSync(g.path, 'r');
  try {
    const tensors = g.tensors.map((t) => {
      const b = new Uint8Array(t.nbytes);
      readTensorBytes(fd, t, b);
      return { name: t.name, type: typeName(t.type), shape: t.shape, sha256: sha(b) };
    });
    const metadata = Object.fromEntries([...g.metadata].map(([k, v]) => [k, { type: v.type, value: valueDigest(v) }]));
    return { size: g.fileSize, sha256: sha(fs.readFileSync(g.path)), metadataOrder: [...g.metadata.keys()], metadata, tensors };
  } finally {
    fs.closeSync(fd);
  }
}
