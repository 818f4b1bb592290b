import { afterAll } from 'vitest';
import type { Db } from '../server/db/client';
import { captureStderr, expectNoSecretLeaks } from './fixtures';

/**
 * Watches a test file for leaked secrets: the tokens it mints (`minted`), the answers it got (`answers`) and
 * what it wrote to stderr. After the file's tests none of those texts, nor any event or audit row, may hold
 * any form of a minted token. Call it at the top of the file, so that stderr is captured from the start.
 */
export function watchSecretLeaks(db: Db): { minted: string[]; answers: string[] } {
  const stderr = captureStderr();
  const watch = { minted: [] as string[], answers: [] as string[] };
  afterAll(async () => {
    stderr.stop();
    await expectNoSecretLeaks(db, watch.minted, [...watch.answers, ...stderr.lines]);
  });
  return watch;
}
