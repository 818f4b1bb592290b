import { getPgPool } from '../db/pg';
import { loadPkiRuntime, loadRootTenantId } from '../join/join-runtime';
import { SessionService } from './session-service';
import { sessionSettingsFromEnv } from './settings';

const globalForSessions = globalThis as unknown as { sessionService?: SessionService };

/** The process's SessionService, on DATABASE_URL, with JoinService's keys (it signs the welcome). */
export function getSessionService(): SessionService {
  return (globalForSessions.sessionService ??= new SessionService({
    pool: getPgPool(),
    loadRuntime: () => loadPkiRuntime(),
    loadRootTenantId,
    settings: sessionSettingsFromEnv(),
  }));
}
