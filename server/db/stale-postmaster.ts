import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';

/**
 * Beside the cluster: the pid of the process that started the PostgreSQL running on it (a server, or a CLI
 * command on the server machine). PostgreSQL is that process's child, so while the owner lives the postmaster's
 * parent is the owner; once the owner died without stopping it (SIGKILL, the OOM killer) the postmaster has been
 * re-parented and the file names a process that is not its parent.
 */
const OWNER_FILE = 'postgres.owner';

/** The fields of /proc/<pid>/stat after the command name (state first, then the parent pid), or null. */
function statOf(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may itself hold spaces.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Alive and not a zombie: an exited orphan whose new parent has not reaped it yet is gone for our purpose. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return statOf(pid)?.[0] !== 'Z';
};

const parentOf = (pid: number): number | null => {
  const fields = statOf(pid);
  return fields ? Number(fields[1]) : null;
};

/** Whether `pid` is a postgres started with `-D databaseDir` (so a reused pid is never signalled). */
function isPostmasterOf(pid: number, databaseDir: string): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const dir = argv[argv.indexOf('-D') + 1];
    return (
      path.basename(argv[0] ?? '') === 'postgres' &&
      argv.includes('-D') &&
      dir !== undefined &&
      path.resolve(dir) === path.resolve(databaseDir)
    );
  } catch {
    return false;
  }
}

/** Records this process as the owner of the PostgreSQL it just started under `dataDir`. */
export function recordPostmasterOwner(dataDir: string): void {
  const file = path.join(dataDir, OWNER_FILE);
  writeFileSync(`${file}.tmp`, `${process.pid}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) if (!alive(pid)) return true;
  return !alive(pid);
}

/**
 * Stops a PostgreSQL that a previous server left running on `databaseDir` after it died without stopping it,
 * so the next start recovers by itself instead of failing on the lock file. It is stopped cleanly: SIGINT, the
 * fast shutdown (open transactions roll back, a checkpoint is written), waited for up to `fastMs`; only if that
 * does not end it, SIGQUIT (an immediate shutdown, after which PostgreSQL replays its WAL on the next start:
 * still nothing committed is lost). A PostgreSQL whose owner is alive and still its parent is in use and left
 * alone, as is anything the lock file names that is not a postgres on this directory.
 *
 * @returns the pid it stopped, or null when there was nothing to stop.
 * @throws Error when the orphan does not stop.
 */
export async function stopOrphanedPostmaster(
  dataDir: string,
  databaseDir: string,
  options: { log?: (line: string) => void; fastMs?: number; immediateMs?: number } = {},
): Promise<number | null> {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n', 1)[0]);
  } catch {
    return null;
  }
  // A lock file whose process is gone is PostgreSQL's own case: it starts over it.
  if (!Number.isInteger(pid) || pid <= 1 || !alive(pid) || !isPostmasterOf(pid, databaseDir)) return null;
  let owner: number | null = null;
  try {
    owner = Number(readFileSync(path.join(dataDir, OWNER_FILE), 'utf8').trim());
  } catch {
    // started by an earlier release, which recorded no owner: orphaned only once re-parented to init
  }
  const parent = parentOf(pid);
  const orphaned = owner ? parent !== owner : parent === 1;
  if (!orphaned) return null;

  options.log?.(`Stopping the PostgreSQL (pid ${pid}) that a previous start left running under ${databaseDir} …`);
  try {
    process.kill(pid, 'SIGINT');
  } catch (error) {
    // EPERM: another user's PostgreSQL (a start as root, then one as a user); only that user can stop it.
    throw new Error(
      `The PostgreSQL (pid ${pid}) a previous start left running under ${databaseDir} cannot be stopped by this user (${(error as NodeJS.ErrnoException).code}); stop it, then start again`,
      { cause: error },
    );
  }
  if (await waitForExit(pid, options.fastMs ?? 60_000)) return pid;
  options.log?.(`PostgreSQL (pid ${pid}) did not finish its fast shutdown; stopping it immediately (it replays its WAL on start)`);
  process.kill(pid, 'SIGQUIT');
  if (await waitForExit(pid, options.immediateMs ?? 15_000)) return pid;
  throw new Error(
    `The PostgreSQL (pid ${pid}) a previous start left running under ${databaseDir} does not stop; stop it, then start again`,
  );
}
