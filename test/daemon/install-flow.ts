import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { run } from '../bcd-build';
import type { BcdDeployment } from './deployment';
import { writeInstallScript } from './install-script';
import { machineEnv } from './machine';

/** The PATH the install script runs with. */
const PATH = '/usr/bin:/bin';

/** bcd's environment on machine `root`, PATH the script's unless named. */
export const env = (root: string, path = PATH, extra: Record<string, string> = {}) => machineEnv(root, path, extra);

/** The install script of `d`'s default pool in a file, with the digests `sha256` names. */
export const scriptFile = (d: BcdDeployment, sha256: { amd64?: string }) =>
  writeInstallScript(d.database.db, d.admin, {
    tenantId: d.pool.ownerTenantId,
    poolId: d.pool.id,
    gatewayUrl: d.gatewayUrl,
    baseUrl: d.server.url,
    bcd: d.bcd,
    sha256,
  });

/** `sh script` on machine `root`: the token in BCD_JOIN_TOKEN, `input` on standard input, `args` after the script. */
export const runScript = (script: string, root: string, options: { token?: string; input?: string; args?: string[] } = {}) =>
  run('sh', [script, ...(options.args ?? [])], {
    env: env(root, PATH, options.token ? { BCD_JOIN_TOKEN: options.token } : {}),
    input: options.input,
  });

export const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
export const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
