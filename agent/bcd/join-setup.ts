import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { configFromWellKnown } from './bootstrap-config';
import { formatConfigToml, parseConfigToml, writeFileAtomic, type BcdConfig } from './config-toml';
import { bcdPaths, joinKeyPathFor } from './paths';
import { joinFetch } from './join-fetch';
import { baseUrlOf } from './base-url';
import { readStoredIdentity } from './read-identity';
import { TrustStore } from '../trust/store';
import { agentErrorClass } from '../errors';

export interface JoinArgs {
  config?: string;
  server?: string;
  servingCaPin?: string;
  joinSigningPin?: string;
  joinEncryptionPin?: string;
  tokenFile?: string;
  reset?: boolean;
  yes?: boolean;
  /** `join-token` (the default) or `tpm`. */
  attestor?: string;
  /** A `tpm` join's site (else config.toml's `site`) and optional pool. */
  site?: string;
  pool?: string;
  /** `--tpm`: the TPM a `tpm` join uses (else BCD_TPM, else /dev/tpmrm0). */
  tpm?: string;
  /** A `tpm` join that must wait returns at once (exit 3) instead of retrying until an operator decides. */
  noWait?: boolean;
  /** Where the identity is kept instead of bcdPaths' (`bcd site` keeps its own beside its config). */
  identityDir?: string;
  /** `--node-id`: a provisioned join (the deploy's token) as this node; any other answer is not stored. */
  nodeId?: string;
}

export const JOIN_ATTESTORS = ['join-token', 'tpm'] as const;

export interface CommandIo {
  out: (line: string) => void;
  err: (line: string) => void;
  stdin?: NodeJS.ReadableStream;
  env?: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
}

export class UsageError extends agentErrorClass('USAGE', 'UsageError') {}

async function readConfig(file: string): Promise<BcdConfig | null> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  return text === null ? null : parseConfigToml(text, file);
}

/** What both joins need: the paths, the pinned configuration (or the install's pins checked against the server), the fetch. */
export interface JoinSetup {
  paths: ReturnType<typeof bcdPaths>;
  configPath: string;
  jwkPath: string;
  existing: BcdConfig | null;
  serverUrl: string;
  doFetch: typeof fetch | undefined;
  bootstrap: Awaited<ReturnType<typeof configFromWellKnown>> | null;
  pins: { joinSigningKeyPin: string; joinEncryptionKeyPin: string };
  /** The trust set held (trust.json beside the identity), or the install's pins at version 0. */
  trust: TrustStore;
}

/**
 * The pinned configuration (config.toml, or with none, `--server` and the three pins checked against the
 * well-known document); null when the machine already holds an identity (`already joined` is printed).
 */
export async function joinSetup(args: JoinArgs, io: CommandIo): Promise<JoinSetup | null> {
  const paths = { ...bcdPaths(io.env), ...(args.identityDir ? { identityDir: args.identityDir } : {}) };
  const configPath = args.config ?? paths.config;
  const jwkPath = joinKeyPathFor(configPath);
  if (args.reset && !args.yes) throw new UsageError('--reset moves the current identity aside; confirm with --reset --yes');
  const existing = await readConfig(configPath);
  if (!existing) {
    if (!args.server) throw new UsageError(`There is no ${configPath}; join with --server URL and the three pins from the install`);
    if (!args.servingCaPin || !args.joinSigningPin || !args.joinEncryptionPin) {
      throw new UsageError('Without config.toml, --server needs --serving-ca-pin, --join-signing-pin and --join-encryption-pin');
    }
  }
  if (args.attestor === 'tpm' && !args.site && !existing?.site)
    throw new UsageError(`a tpm join names its site: --site SITE (or site in ${configPath})`);

  const stored = args.reset ? null : await readStoredIdentity(paths.identityDir);
  if (stored) {
    io.out(`already joined: node ${stored.identity.nodeId} (site ${stored.identity.siteId}); to join again: bcd join --reset --yes`);
    return null;
  }
  // --server is only where the well-known document is read (system CAs; its keys are taken only when they match
  // the install's pins). The join itself goes to the gateway, as every later call does.
  const wellKnownUrl = args.server === undefined ? undefined : baseUrlOf(args.server, '--server');
  // A set received before (kept across --reset) still holds: a machine that caught up with a rotation joins
  // again under the keys in use now, whatever config.toml pinned.
  const trust = await TrustStore.open({
    dir: paths.identityDir,
    install: {
      servingCaPin: existing?.servingCaSpkiPin ?? args.servingCaPin,
      joinSigningKeyPin: existing?.joinSigningKeyPin ?? args.joinSigningPin,
      joinEncryptionKeyPin: existing?.joinEncryptionKeyPin ?? args.joinEncryptionPin,
    },
    log: (line) => io.err(`bcd: ${line}`),
  });
  const bootstrap = existing
    ? null
    : await configFromWellKnown({
        serverUrl: wellKnownUrl!,
        pins: { servingCaPin: args.servingCaPin!, joinSigningPin: args.joinSigningPin!, joinEncryptionPin: args.joinEncryptionPin! },
        fetch: io.fetch,
      });
  const pins = existing ?? bootstrap!.config;
  const serverUrl = baseUrlOf(pins.gatewayUrl, existing ? `gateway_url of ${configPath}` : 'the gateway of the well-known document');
  const doFetch = joinFetch({ gatewayUrl: serverUrl, servingCaPin: pins.servingCaSpkiPin, trust, wellKnownUrl, fetch: io.fetch });
  return { paths, configPath, jwkPath, existing, serverUrl, doFetch, bootstrap, pins, trust };
}

/** Written only after a join: a failed join leaves no configuration naming an identity that does not exist. */
export async function writeBootstrapConfig(setup: JoinSetup, siteId: string): Promise<void> {
  if (!setup.bootstrap) return;
  await mkdir(path.dirname(setup.configPath), { recursive: true, mode: 0o755 });
  await writeFileAtomic(setup.jwkPath, `${JSON.stringify(setup.bootstrap.encryptionJwk)}\n`, 0o644);
  await writeFileAtomic(setup.configPath, formatConfigToml({ ...setup.bootstrap.config, site: siteId }), 0o600);
}
