import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { loadJoinEncryptionKey } from '../join-key';
import { parseConfigToml, type BcdConfig } from './config-toml';
import type { CommandIo } from './join-command';
import { gatewayChecks } from './node-command';
import { bcdPaths, joinKeyPathFor } from './paths';
import { readStoredIdentity } from './read-identity';
import { versionLine } from './version';
import { checkNodeKey, nodeKeySpki } from './doctor-key';
import { nodeKeyTpmOf } from '../tpm/node-key';
import { nodeKeyHelper } from '../helper/client';

interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
}

const check = async (name: string, run: () => Promise<string>): Promise<DoctorCheck> => {
  try {
    return { name, ok: true, detail: await run() };
  } catch (error) {
    return { name, ok: false, detail: (error as Error).message };
  }
};

/** The identity check: both files, a leaf that certifies node.key's key, and not expired. */
export async function checkIdentity(identityDir: string, now = new Date()): Promise<string> {
  const stored = await readStoredIdentity(identityDir);
  if (!stored) throw new Error(`not joined: ${identityDir} holds no identity; join as root: bcd join < token-file`);
  const leaf = new X509Certificate(Buffer.from(stored.identity.certificateChain[0] ?? '', 'base64'));
  const keySpki = nodeKeySpki(stored.keyPem);
  if (!leaf.publicKey.export({ type: 'spki', format: 'der' }).equals(keySpki))
    throw new Error('node.key is not the key the certificate certifies');
  const expires = new Date(leaf.validTo);
  if (expires <= now) {
    throw new Error(`the certificate expired at ${expires.toISOString()}; join again as root: bcd join --reset --yes, then bcd join`);
  }
  return `node ${stored.identity.nodeId}, site ${stored.identity.siteId}, role ${stored.identity.role}, certificate valid until ${expires.toISOString()}`;
}

/** What `bcd doctor --json` prints and a `bcd.doctor` command answers: the version line and every check. */
interface DoctorReport {
  [key: string]: unknown;
  version: string;
  ok: boolean;
  checks: DoctorCheck[];
}

/**
 * `bcd doctor`'s checks: the configuration, the join key, the identity, where the node key lives (`key`), and
 * whether the gateway answers under the pinned serving CA (the renewal loop's own check, agent/renew).
 */
export async function doctorReport(args: { config?: string }, io: Pick<CommandIo, 'env'>): Promise<DoctorReport> {
  const paths = bcdPaths(io.env);
  const configPath = args.config ?? paths.config;
  let config: BcdConfig | null = null;
  const checks = [
    await check('config', async () => {
      config = parseConfigToml(await readFile(configPath, 'utf8'), configPath);
      return `${configPath}: gateway ${config.gatewayUrl}, site ${config.site}`;
    }),
    await check('join-key', async () => {
      if (!config) throw new Error('skipped: no usable config.toml');
      const key = await loadJoinEncryptionKey({ jwkPath: joinKeyPathFor(configPath), pin: config.joinEncryptionKeyPin });
      return `${joinKeyPathFor(configPath)} matches join_encryption_key_pin (${key.source})`;
    }),
    await check('identity', () => checkIdentity(paths.identityDir)),
    await check('key', async () => {
      const stored = await readStoredIdentity(paths.identityDir).catch(() => null);
      if (!stored) throw new Error('skipped: no identity');
      const leaf = Buffer.from(stored.identity.certificateChain[0] ?? '', 'base64');
      // Under [helper], a software key moves into the helper's TPM: the helper is asked whether it has one.
      const helper = config?.helper ? nodeKeyHelper(config.helper.socket) : undefined;
      return checkNodeKey(stored.keyPem, leaf, nodeKeyTpmOf(undefined, io.env ?? process.env), helper);
    }),
  ];
  // Only with a usable config.toml: it names the gateway and the serving CA pin.
  const usable = config as BcdConfig | null;
  if (usable) checks.push(...(await gatewayChecks(usable, paths.identityDir)));
  return { version: versionLine(), ok: checks.every((result) => result.ok), checks };
}

/** `bcd doctor`: one line per check, or with `json` the report as one JSON line. Exit code 1 when any check fails. */
export async function runDoctor(args: { config?: string; json?: boolean }, io: CommandIo): Promise<number> {
  const report = await doctorReport(args, io);
  if (args.json) io.out(JSON.stringify(report));
  else {
    io.out(report.version);
    for (const result of report.checks) io.out(`${result.ok ? 'ok  ' : 'FAIL'} ${result.name.padEnd(9)} ${result.detail}`);
  }
  return report.ok ? 0 : 1;
}
