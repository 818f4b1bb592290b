import type pg from 'pg';
import { logError } from '../log';
import { EXPIRE_COMMANDS } from './commands-sql';

/** How often each instance ends commands that ran out of time. */
const EXPIRY_TICK_MS = 5_000;
/** Commands one statement ends at most; a tick repeats while a full batch came back. */
const EXPIRY_BATCH = 1_000;

/**
 * Ends `expired` the commands not delivered before their deadline or not answered within their time limit
 * (EXPIRE_COMMANDS); answers how many. Rows another instance holds are skipped, so however many instances run
 * it, each command ends once.
 */
export async function expireCommands(pool: pg.Pool, batch = EXPIRY_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await pool.query<{ expired: number }>({ name: 'commands-expire', text: EXPIRE_COMMANDS, values: [batch] });
    const expired = result.rows[0]?.expired ?? 0;
    total += expired;
    if (expired < batch) return total;
  }
}

/**
 * Runs {@link expireCommands} every `intervalMs` until the returned stop is called (which waits for a tick under
 * way); every API instance runs one. Failures are logged and the next tick tries again.
 */
export function startCommandExpiryWorker(pool: pg.Pool, intervalMs = EXPIRY_TICK_MS): () => Promise<void> {
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = expireCommands(pool)
      .catch((error) => logError('command expiry failed', error))
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
