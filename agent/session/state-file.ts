import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** What `agent run` / `bcd node` last knew of its session, for `doctor` (a separate process). */
interface SessionStateRecord {
  connected: boolean;
  /** Connected: when this session began; disconnected: when the last one ended (null: none yet). */
  since: string | null;
  lastHeartbeat: string | null;
  sessionId: string | null;
  gatewayUrl: string;
  /** When the record was written; a stale one (the agent is not running) says so in doctor. */
  updatedAt: string;
  pid: number;
}

const SESSION_STATE_FILE = 'session.json';

/** Writes the record atomically (a temporary file, then a rename); a failure is not the session's concern. */
export async function writeSessionState(dir: string, record: Omit<SessionStateRecord, 'updatedAt' | 'pid'>): Promise<void> {
  const file = path.join(dir, SESSION_STATE_FILE);
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, JSON.stringify({ ...record, updatedAt: new Date().toISOString(), pid: process.pid }) + '\n', {
      mode: 0o644,
    });
    await rename(temporary, file);
  } catch {
    // A read-only or full disk must not end the session; doctor then reports the file as missing or stale.
  }
}

async function readSessionState(dir: string): Promise<SessionStateRecord | null> {
  try {
    return JSON.parse(await readFile(path.join(dir, SESSION_STATE_FILE), 'utf8')) as SessionStateRecord;
  } catch {
    return null;
  }
}

/** A heartbeat comes at least every 60 s; a record this much older means the agent is not keeping it. */
const STALE_MS = 150_000;

/**
 * The `session` line of `doctor`: connected (since when, the last heartbeat, the session id and gateway), or
 * why not. Reads what the running agent wrote: it fails when the session ended (the agent stopped, or cannot
 * reach the gateway) or its record went stale (the agent died); no record at all is no session yet.
 */
export async function sessionCheck(dir: string, now = Date.now()): Promise<{ name: string; ok: boolean; detail: string }> {
  const record = await readSessionState(dir);
  // Never kept one (just joined, or only renewed with --once): nothing is wrong yet, and doctor says so.
  if (!record) return { name: 'session', ok: true, detail: 'none yet: the agent (bcd node, better-compute agent run) has not opened one' };
  const heard = Date.parse(record.lastHeartbeat ?? record.updatedAt);
  if (record.connected && now - heard <= STALE_MS) {
    return {
      name: 'session',
      ok: true,
      detail: `connected since ${record.since} through ${record.gatewayUrl} (${record.sessionId}), last heartbeat ${record.lastHeartbeat}`,
    };
  }
  if (record.connected)
    return {
      name: 'session',
      ok: false,
      detail: `no heartbeat since ${record.lastHeartbeat}: the agent (pid ${record.pid}) is not keeping its session`,
    };
  return { name: 'session', ok: false, detail: `disconnected since ${record.since ?? 'never connected'} (${record.gatewayUrl})` };
}
