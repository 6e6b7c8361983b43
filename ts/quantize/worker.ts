/** A RowPool worker: quantizes the row jobs it is sent (see pool.ts). */
import { parentPort } from 'node:worker_threads';
import { runJob, type RowJob } from './rows.js';

parentPort!.on('message', (m: { job: RowJob; rowBytes: number }) => {
  try {
    const out = runJob(m.job, m.rowBytes);
    parentPort!.postMessage({ out }, [out.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
  }
});
