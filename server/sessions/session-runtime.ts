import { getPgPool } from '../db/pg';
import { loadPkiRuntime, loadRootTenantId } from '../join/join-runtime';
import { SessionService } from './session-service';
import { sessionSettingsFromEnv } from './settings';
import { SessionsListener } from './session-watch';

const globalForSessions = globalThis as unknown as { sessionService?: SessionService; sessionsListener?: SessionsListener };

/** The process's SessionService, on DATABASE_URL, with JoinService's keys (it signs the welcome). */
export function getSessionService(): SessionService {
  return (globalForSessions.sessionService ??= new SessionService({
    pool: getPgPool(),
    loadRuntime: () => loadPkiRuntime(),
    loadRootTenantId,
    settings: sessionSettingsFromEnv(),
  }));
}

/** The process's LISTEN on the session-end channel, shared by every gateway's watch stream. */
export function processSessionsListener(): SessionsListener {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set');
  return (globalForSessions.sessionsListener ??= new SessionsListener(url));
}
