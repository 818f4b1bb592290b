/**
 * The body of a JoinService preparation thread (see prepare-worker-pool.ts): receives batches of request
 * bodies, prepares each with the same `prepareJoinBytes` the in-process path uses, and answers the batch.
 * Holds the join encryption key, which it receives as a KeyObject and never writes anywhere.
 */
import type { KeyObject } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { packPrepared, prepareJoinBytes, type EarlyRefusal, type PreparedJoin } from './prepare';

export interface ThreadJob {
  id: number;
  /** Where the job's body lies in the batch's `bytes`; a length of -1 is no body (too large or absent). */
  start: number;
  length: number;
}

export interface ThreadBatch {
  /** Sent with the first batch, and again whenever the server's keys change. */
  encryptionKey?: KeyObject;
  /** Every key a seal may be made to (a join-encryption rotation), the one in use first; sent with `encryptionKey`. */
  encryptionKeys?: KeyObject[];
  /** Every body of the batch, one after another (one transferred buffer, not one clone per join). */
  bytes: Uint8Array;
  jobs: ThreadJob[];
}

export type ThreadResult = { id: number; prepared: PreparedJoin | EarlyRefusal } | { id: number; error: string };

let encryptionKey: KeyObject | undefined;
let encryptionKeys: KeyObject[] | undefined;

parentPort!.on('message', (batch: ThreadBatch) => {
  if (batch.encryptionKey) {
    encryptionKey = batch.encryptionKey;
    encryptionKeys = batch.encryptionKeys;
  }
  const results: ThreadResult[] = batch.jobs.map(({ id, start, length }) => {
    try {
      const body = length < 0 ? null : batch.bytes.subarray(start, start + length);
      if (!encryptionKey) throw new Error('no encryption key was sent');
      return { id, prepared: packPrepared(prepareJoinBytes(body, { encryptionKey, encryptionKeys })) };
    } catch (error) {
      // A fault of ours, not a refusal: the join answers INTERNAL and the thread keeps serving.
      return { id, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  });
  parentPort!.postMessage(results);
});
