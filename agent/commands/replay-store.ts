import { readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { syncDirectory, writeTemporary } from '../identity-store';

/** The command ids this agent took, beside identity.json (0600): a command runs at most once, across restarts. */
export const REPLAY_FILE = 'command-replay.json';

/**
 * Ids whose `notAfter` has not passed are never forgotten; beyond this many the agent takes no new command
 * (answered `rejected`, reason `busy`) rather than forget one that could still be replayed.
 */
const MAX_REPLAY_ENTRIES = 4096;

interface ReplayFile {
  format: 1;
  /** Command id to its `notAfter` (Unix seconds). */
  commands: Record<string, number>;
}

/**
 * The durable record of the command ids taken (protocol.md "Commands": at most once per `commandId`). An id is
 * remembered until its `notAfter` passes, after which a replay is refused as expired anyway; each write is
 * atomic (a flushed 0600 file renamed over the old one, then the directory flushed), like trust.json.
 */
export class ReplayStore {
  readonly #dir: string | null;
  readonly #log: (line: string) => void;
  readonly #seen = new Map<string, number>();
  #writes: Promise<unknown> = Promise.resolve();
  /** Why the file on disk cannot be used (null: it can, or there is none yet). */
  #unusable: string | null = null;
  #reading: Promise<void> | null = null;

  private constructor(dir: string | null, log: (line: string) => void) {
    this.#dir = dir;
    this.#log = log;
  }

  /**
   * Loads `dir`'s replay file (none yet: empty). `dir` null keeps it in memory (simulated agents). A file that
   * exists but cannot be read or is not a replay file is left as it is and makes the store unusable (see
   * {@link unusable}): starting empty would let every command it recorded run again until its `notAfter`.
   */
  static async open(dir: string | null, log: (line: string) => void = () => {}): Promise<ReplayStore> {
    const store = new ReplayStore(dir, log);
    if (dir) await store.#read(dir);
    return store;
  }

  async #read(dir: string): Promise<void> {
    const was = this.#unusable;
    let text: string | null = null;
    try {
      text = await readFile(path.join(dir, REPLAY_FILE), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return this.#refuse(`it cannot be read: ${(error as Error).message}`, was);
    }
    if (text !== null) {
      try {
        const record = JSON.parse(text) as Partial<ReplayFile>;
        const commands = record?.commands;
        if (record?.format !== 1 || typeof commands !== 'object' || commands === null) throw new Error('not a replay file');
        for (const [id, notAfter] of Object.entries(commands))
          if (Number.isSafeInteger(notAfter) && this.#seen.size < MAX_REPLAY_ENTRIES) this.#seen.set(id, notAfter);
      } catch (error) {
        return this.#refuse((error as Error).message, was);
      }
    }
    this.#unusable = null;
    if (was !== null) this.#log(`agent: ${REPLAY_FILE} can be used again; commands run again`);
  }

  #refuse(why: string, was: string | null): void {
    this.#unusable = why;
    if (was === null) this.#log(`agent: cannot use ${REPLAY_FILE} (${why}); commands are refused until it is repaired or removed`);
  }

  /**
   * Why no command may be taken now (null: they may): the replay file exists but could not be read or parsed,
   * so this agent cannot know which command ids it already ran. Each call while unusable starts a new read of
   * the file, so once it is repaired (or removed: the operator's decision to start with no ids) the next
   * command is taken.
   */
  unusable(): string | null {
    if (this.#unusable !== null && this.#dir && !this.#reading) this.#reading = this.#read(this.#dir).finally(() => (this.#reading = null));
    return this.#unusable;
  }

  /** Whether `commandId` was taken before. */
  has(commandId: string): boolean {
    return this.#seen.has(commandId);
  }

  /** Forgets the ids whose `notAfter` is before `nowSeconds`; returns whether another id fits. */
  hasRoom(nowSeconds: number): boolean {
    for (const [id, notAfter] of this.#seen) if (notAfter < nowSeconds) this.#seen.delete(id);
    return this.#seen.size < MAX_REPLAY_ENTRIES;
  }

  /**
   * Records `commandId` (at once in memory, so a second event of it is a replay whatever the disk does) and
   * stores the record; resolves when it is on disk.
   *
   * @throws Error when the file cannot be written: the command must not run then.
   */
  take(commandId: string, notAfter: number): Promise<void> {
    this.#seen.set(commandId, notAfter);
    const dir = this.#dir;
    if (!dir) return Promise.resolve();
    const write = async () => {
      const record: ReplayFile = { format: 1, commands: Object.fromEntries(this.#seen) };
      const file = path.join(dir, REPLAY_FILE);
      const temporary = await writeTemporary(file, `${JSON.stringify(record)}\n`);
      try {
        await rename(temporary, file);
      } catch (error) {
        await unlink(temporary).catch(() => {});
        throw error;
      }
      await syncDirectory(dir);
    };
    const next = this.#writes.then(write, write);
    this.#writes = next.catch(() => {});
    return next;
  }
}
