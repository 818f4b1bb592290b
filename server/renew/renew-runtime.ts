import { getPgPool } from '../db/pg';
import { loadPkiRuntime, loadRootTenantId } from '../join/join-runtime';
import { RenewService } from './renew-service';

const globalForRenew = globalThis as unknown as { renewService?: RenewService };

/** The process's RenewService, on DATABASE_URL, with JoinService's keys (it is JoinService's renewal half). */
export function getRenewService(): RenewService {
  return (globalForRenew.renewService ??= new RenewService({
    pool: getPgPool(),
    loadRuntime: () => loadPkiRuntime(),
    loadRootTenantId,
    certTtlSeconds: process.env.BETTER_COMPUTE_CERT_TTL_SECONDS ? Number(process.env.BETTER_COMPUTE_CERT_TTL_SECONDS) : undefined,
  }));
}
