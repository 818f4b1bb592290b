import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { InstallPins } from '../../server/pki/pins-summary';

/** The three pins a join checks (the install's config.toml carries them). */
type JoinPins = Pick<InstallPins, 'servingCaPin' | 'joinSigningKeyPin' | 'joinEncryptionKeyPin'>;

// What the bcd flow tests read and write on a machine: a directory bcd and the install script treat as `/`
// (BCD_ROOT, made by test/bcd-build.ts's newMachineRoot).

/** A PATH with no Node.js on it: the built bcd needs none. */
export const NO_NODE = '/nonexistent';

/** bcd's environment on machine `root`: exactly PATH, BCD_ROOT and `extra` (nothing inherited). */
export const machineEnv = (root: string, PATH: string, extra: Record<string, string> = {}) =>
  ({ PATH, BCD_ROOT: root, ...extra }) as unknown as NodeJS.ProcessEnv;

/** Where bcd keeps its identity on machine `root`. */
export const bcdDataDir = (root: string) => path.join(root, 'var/lib/bcd');

/** The bcd the install script put on machine `root`. */
export const installedBcd = (root: string) => path.join(root, 'usr/local/bin/bcd');

/** identity.json of machine `root`. */
export const identityOf = (root: string) =>
  JSON.parse(readFileSync(path.join(bcdDataDir(root), 'identity.json'), 'utf8')) as {
    nodeId: string;
    siteId: string;
    certificateChain: string[];
  };

/** The node machine `root` joined as. */
export const nodeIdOf = (root: string) => identityOf(root).nodeId;

/** The pins a join names on its command line, as the install documents them. */
export const joinPinArgs = (pins: JoinPins) => [
  '--serving-ca-pin',
  pins.servingCaPin,
  '--join-signing-pin',
  pins.joinSigningKeyPin,
  '--join-encryption-pin',
  pins.joinEncryptionKeyPin,
];

/** The install pins as the well-known document of the server at `serverUrl` publishes them. */
export async function wellKnownPins(serverUrl: string): Promise<JoinPins> {
  const doc = (await (await fetch(`${serverUrl}/api/compute/.well-known/better-compute`)).json()) as {
    gateway: { servingCaPin: string };
    join: { signingKeyPin: string; encryptionKeyPin: string };
  };
  return {
    servingCaPin: doc.gateway.servingCaPin,
    joinSigningKeyPin: doc.join.signingKeyPin,
    joinEncryptionKeyPin: doc.join.encryptionKeyPin,
  };
}

/** config.toml as the install writes it on machine `root`, naming `gatewayUrl`, the site and the pins. */
export function writeInstallConfig(root: string, config: { gatewayUrl: string; siteId: string; pins: JoinPins }): void {
  mkdirSync(path.join(root, 'etc/bcd'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/bcd/config.toml'),
    [
      `gateway_url = "${config.gatewayUrl}"`,
      `site = "${config.siteId}"`,
      `serving_ca_spki_pin = "${config.pins.servingCaPin}"`,
      `join_signing_key_pin = "${config.pins.joinSigningKeyPin}"`,
      `join_encryption_key_pin = "${config.pins.joinEncryptionKeyPin}"`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
}
