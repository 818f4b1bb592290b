import { Worker } from 'node:worker_threads';
import { logError } from '../log';
import { revivePrepared, type EarlyRefusal, type JoinPreparer, type PreparedJoin, type SealKeys } from './prepare';
import type { ThreadBatch, ThreadJob, ThreadResult } from './prepare-worker';

/**
 * How many threads of each server process prepare joins (verify the CSR, open the seal):
 * BETTER_COMPUTE_JOIN_THREADS, default 1; 0 prepares on the event loop itself.
 */
export function joinThreadCount(env: Record<string, string | undefined> = process.env): number {
  const configured = env.BETTER_COMPUTE_JOIN_THREADS;
  if (configured === undefined || configured === '') return 1;
  const n = Number(configured);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new Error(`BETTER_COMPUTE_JOIN_THREADS must be 0 to 64, not ${configured}`);
  return n;
}

interface Waiter {
  resolve: (value: PreparedJoin | EarlyRefusal) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker | null;
  /** The keys the thread holds; a batch carries the keys only when they differ (a new trust version). */
  sentKey: SealKeys | null;
  outbox: { id: number; body: Uint8Array | null; key: SealKeys; waiter: Waiter }[];
  waiting: Map<number, Waiter>;
  flushing: boolean;
}

/**
 * Prepares joins on worker threads, so the event loop that serves HTTP and drives the admission
 * transactions does not also verify every CSR and open every seal: on a busy shared token that work is
 * most of a join's CPU. Requests that arrive in one turn of the event loop travel as one message (their
 * bodies in one transferred buffer) to the least busy thread. A thread that dies fails only the joins it
 * held (they answer INTERNAL, which the agent retries) and is started again on the next join.
 */
export class ThreadedPreparer implements JoinPreparer {
  private readonly slots: Slot[];
  private nextId = 1;
  private closed = false;

  constructor(threads: number) {
    if (!Number.isInteger(threads) || threads < 1) throw new Error('threads must be a positive integer');
    this.slots = Array.from({ length: threads }, () => ({ worker: null, sentKey: null, outbox: [], waiting: new Map(), flushing: false }));
  }

  prepare(body: Uint8Array | null, crypto: SealKeys): Promise<PreparedJoin | EarlyRefusal> {
    if (this.closed) return Promise.reject(new Error('the join preparation threads are closed'));
    const slot = this.slots.reduce((best, s) => (s.waiting.size + s.outbox.length < best.waiting.size + best.outbox.length ? s : best));
    return new Promise((resolve, reject) => {
      slot.outbox.push({ id: this.nextId++, body, key: crypto, waiter: { resolve, reject } });
      if (!slot.flushing) {
        slot.flushing = true;
        setImmediate(() => this.flush(slot));
      }
    });
  }

  /** Starts every thread now, so the first joins do not wait for a thread to load. */
  start(): void {
    if (!this.closed) for (const slot of this.slots) this.ensureWorker(slot);
  }

  /** Stops the threads; joins still in them fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.slots.map(async (slot) => {
        const worker = slot.worker;
        slot.worker = null;
        this.fail(slot, new Error('the join preparation threads were closed'));
        await worker?.terminate();
      }),
    );
  }

  private flush(slot: Slot) {
    slot.flushing = false;
    const items = slot.outbox.splice(0);
    if (!items.length) return;
    try {
      const worker = this.ensureWorker(slot);
      const total = items.reduce((sum, item) => sum + (item.body?.length ?? 0), 0);
      const bytes = new Uint8Array(total);
      const jobs: ThreadJob[] = [];
      let offset = 0;
      for (const item of items) {
        slot.waiting.set(item.id, item.waiter);
        if (item.body) {
          bytes.set(item.body, offset);
          jobs.push({ id: item.id, start: offset, length: item.body.length });
          offset += item.body.length;
        } else {
          jobs.push({ id: item.id, start: 0, length: -1 });
        }
      }
      // Every item of one flush was prepared against the same loaded keys; the last one decides.
      const key = items[items.length - 1]!.key;
      const batch: ThreadBatch = { bytes, jobs };
      // The same keys object (one JoinCrypto per trust version) is sent once per thread.
      if (!slot.sentKey || key.encryptionKey !== slot.sentKey.encryptionKey || key.encryptionKeys !== slot.sentKey.encryptionKeys) {
        batch.encryptionKey = key.encryptionKey;
        batch.encryptionKeys = key.encryptionKeys ? [...key.encryptionKeys] : [key.encryptionKey];
        slot.sentKey = key;
      }
      worker.postMessage(batch, [bytes.buffer]);
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      for (const item of items) {
        slot.waiting.delete(item.id);
        item.waiter.reject(failure);
      }
    }
  }

  private ensureWorker(slot: Slot): Worker {
    if (slot.worker) return slot.worker;
    const worker = new Worker(new URL('./prepare-worker.mjs', import.meta.url), { name: 'join-prepare' });
    worker.unref();
    worker.on('message', (results: ThreadResult[]) => {
      for (const result of results) {
        const waiter = slot.waiting.get(result.id);
        if (!waiter) continue;
        slot.waiting.delete(result.id);
        if ('error' in result) waiter.reject(new Error(`join preparation failed: ${result.error}`));
        else waiter.resolve(revivePrepared(result.prepared));
      }
    });
    const lost = (error: Error) => {
      if (slot.worker !== worker) return;
      slot.worker = null;
      slot.sentKey = null;
      logError('a join preparation thread stopped; the joins it held answer INTERNAL', error);
      this.fail(slot, error);
    };
    worker.on('error', (error) => lost(error));
    worker.on('exit', (code) => lost(new Error(`the join preparation thread exited (${code})`)));
    slot.worker = worker;
    return worker;
  }

  private fail(slot: Slot, error: Error) {
    for (const waiter of slot.waiting.values()) waiter.reject(error);
    slot.waiting.clear();
    for (const item of slot.outbox.splice(0)) item.waiter.reject(error);
  }
}
