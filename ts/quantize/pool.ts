/**
 * Row jobs on worker threads (one per core by default). Results come back in submission order
 * through their promises; the driver bounds how many are in flight, so memory stays a few jobs
 * per thread whatever the model size. Without a built worker (tests running the TypeScript
 * sources) or with one thread, jobs run on this thread.
 */
import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { runJob, type RowJob } from './rows.js';

interface Pending { resolve: (b: Uint8Array) => void; reject: (e: Error) => void }

export class RowPool {
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly queue: { job: RowJob; rowBytes: number; p: Pending }[] = [];
  private readonly busy = new Map<Worker, Pending>();
  private failed: Error | null = null;

  constructor(threads: number) {
    const url = new URL('./worker.js', import.meta.url);
    if (threads <= 1 || !fs.existsSync(fileURLToPath(url))) return;
    for (let i = 0; i < threads; i++) {
      const w = new Worker(url);
      w.on('message', (m: { out?: Uint8Array; error?: string }) => {
        const p = this.busy.get(w)!;
        this.busy.delete(w);
        if (m.error !== undefined) p.reject(new Error(m.error)); else p.resolve(m.out!);
        this.idle.push(w);
        this.pump();
      });
      w.on('error', (e) => {
        this.failed = e;
        this.busy.get(w)?.reject(e);
        this.busy.delete(w);
      });
      this.workers.push(w);
      this.idle.push(w);
    }
  }

  get threads(): number {
    return Math.max(1, this.workers.length);
  }

  run(job: RowJob, rowBytes: number): Promise<Uint8Array> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.workers.length === 0) {
      try { return Promise.resolve(runJob(job, rowBytes)); } catch (e) { return Promise.reject(e); }
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ job, rowBytes, p: { resolve, reject } });
      this.pump();
    });
  }

  private pump(): void {
    while (this.idle.length && this.queue.length) {
      const w = this.idle.pop()!, q = this.queue.shift()!;
      this.busy.set(w, q.p);
      const transfer = [q.job.src.buffer as ArrayBuffer];
      w.postMessage({ job: q.job, rowBytes: q.rowBytes }, transfer);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
