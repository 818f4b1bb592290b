import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Principal } from '../../server/authz/principal';
import { generateInstallScript } from '../../server/daemon/generate';
import type { Db } from '../../server/db/client';
import type { BcdBuild } from '../bcd-build';

const scriptDirs = new Set<string>();
process.once('exit', () => scriptDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/**
 * The install script generated for `poolId`, downloading `bcd` from `baseUrl` and joining through `gatewayUrl`,
 * with the build's own digest unless `sha256` names others. generateInstallScript opens the PKI as the server
 * does: BETTER_COMPUTE_SECRET must hold the server's secret.
 */
async function installScriptFor(
  db: Db,
  admin: Principal,
  options: { tenantId: string; poolId: string; gatewayUrl: string; baseUrl: string; bcd: BcdBuild; sha256?: { amd64?: string } },
): Promise<string> {
  const { bcd, sha256 = { amd64: bcd.sha256 }, ...target } = options;
  return (await generateInstallScript(db, admin, { ...target, bcdVersion: bcd.version, sha256 }, bcd.dir)).script;
}

/** {@link installScriptFor}, written to install-bcd.sh in a directory of its own (gone when the process exits). */
export async function writeInstallScript(...args: Parameters<typeof installScriptFor>): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bcd-script-'));
  scriptDirs.add(dir);
  const file = path.join(dir, 'install-bcd.sh');
  writeFileSync(file, await installScriptFor(...args));
  return file;
}
