import { afterAll, beforeAll } from 'vitest';
import { principalOf, type Principal } from '../../server/authz/principal';
import { loadPki } from '../../server/pki/bundle/store';
import { installPins, type InstallPins } from '../../server/pki/pins-summary';
import { startBcdServer, type BcdServer } from '../bcd-build';
import { defaultPool, newServerSecret } from '../server-process';
import { joinTokenMaker } from './tokens';

/** What a bcd flow test file runs against: {@link startBcdServer}'s, with the default pool and its admin. */
export interface BcdDeployment extends Omit<BcdServer, 'stop'> {
  secret: string;
  /** The root tenant's default pool. */
  pool: { id: string; ownerTenantId: string; siteId: string };
  /** An admin of the pool's tenant (a local principal). */
  admin: Principal;
  /** The install pins (with `pins: true`). */
  pins: InstallPins;
  /** A one-use join token of the default pool, or of the pool named. */
  newToken: (poolId?: string) => Promise<string>;
}

/**
 * Registers the file's beforeAll, which starts {@link startBcdServer} on database `label` (the server's `env`
 * added) and sets BETTER_COMPUTE_SECRET for generateInstallScript, which opens the PKI as the server does, and
 * its afterAll, which stops it. Answers the deployment, its fields set once beforeAll ran. Tokens allow a
 * reclaim with `allowReclaim`; `pins` opens the PKI for the install pins (a scrypt: seconds).
 */
export function useBcdDeployment(
  label: string,
  options: { env?: Record<string, string>; allowReclaim?: boolean; pins?: boolean } = {},
): BcdDeployment {
  const secret = newServerSecret();
  const d = { secret } as BcdDeployment;
  let started: BcdServer | undefined;
  beforeAll(async () => {
    started = await startBcdServer(label, secret, { env: options.env });
    ({ bcd: d.bcd, database: d.database, server: d.server, gatewayUrl: d.gatewayUrl } = started);
    process.env.BETTER_COMPUTE_SECRET = secret;
    d.pool = await defaultPool(d.database.db);
    const tenantId = d.pool.ownerTenantId;
    d.admin = principalOf('local', `${label.replace(/_/g, '-')}-test`, [[tenantId, 'admin']]);
    if (options.pins) d.pins = installPins(await loadPki(d.database.db, secret));
    const tokens = { tenantId, poolId: d.pool.id, label: label.replace(/_/g, '-'), allowReclaim: options.allowReclaim };
    d.newToken = joinTokenMaker(d.database.db, d.admin, tokens);
  }, 300_000);
  afterAll(async () => {
    await started?.stop();
  });
  return d;
}
