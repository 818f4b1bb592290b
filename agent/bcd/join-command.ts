import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { readLinuxClaims } from '../claims-linux';
import { joinWithToken } from '../join';
import { configFromWellKnown } from './bootstrap-config';
import { formatConfigToml, parseConfigToml, writeFileAtomic, type BcdConfig } from './config-toml';
import { bcdPaths, joinKeyPathFor } from './paths';
import { readStoredIdentity } from './read-identity';
import { pinnedFetch } from './pinned-fetch';
import { readTokenFile, readTokenFromStdin, removeTokenFile } from './token-input';

export interface JoinArgs {
  config?: string;
  server?: string;
  servingCaPin?: string;
  joinSigningPin?: string;
  joinEncryptionPin?: string;
  tokenFile?: string;
  reset?: boolean;
  yes?: boolean;
}

export interface CommandIo {
  out: (line: string) => void;
  err: (line: string) => void;
  stdin?: NodeJS.ReadableStream;
  env?: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

async function readConfig(file: string): Promise<BcdConfig | null> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  return text === null ? null : parseConfigToml(text, file);
}

/**
 * `bcd join`: the pinned configuration (config.toml, or with none, `--server` and the three pins checked
 * against the well-known document), then the token (standard input, or `--token-file`), then the join, which
 * writes the identity only after the answer verified. A machine that already holds an identity answers
 * `already joined` before the token is read, so the token is not spent. Returns the exit code.
 */
export async function runJoin(args: JoinArgs, io: CommandIo): Promise<number> {
  const paths = bcdPaths(io.env);
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

  const stored = args.reset ? null : await readStoredIdentity(paths.identityDir);
  if (stored) {
    io.out(`already joined: node ${stored.identity.nodeId} (site ${stored.identity.siteId}); to join again: bcd join --reset --yes`);
    return 0;
  }
  const token = args.tokenFile ? await readTokenFile(args.tokenFile) : await readTokenFromStdin(io.stdin);

  const serverUrl = (args.server ?? existing!.gatewayUrl).replace(/\/+$/, '');
  // Without --server the join goes to the gateway, authenticated by the serving CA pin rather than the system's CAs.
  const viaGateway = !args.server && serverUrl.startsWith('https://');
  const doFetch = io.fetch ?? (viaGateway ? pinnedFetch({ servingCaPin: existing!.servingCaSpkiPin }) : undefined);
  const bootstrap = existing
    ? null
    : await configFromWellKnown({
        serverUrl,
        pins: { servingCaPin: args.servingCaPin!, joinSigningPin: args.joinSigningPin!, joinEncryptionPin: args.joinEncryptionPin! },
        fetch: io.fetch,
      });
  const pins = existing ?? bootstrap!.config;
  const answer = await joinWithToken({
    serverUrl,
    token,
    // BCD_ROOT (tests only) is also where the machine's sysfs is read from, so a test machine has identifiers.
    claims: await readLinuxClaims((io.env ?? process.env).BCD_ROOT || '/'),
    pins: { joinSigningKeyPin: pins.joinSigningKeyPin, joinEncryptionKeyPin: pins.joinEncryptionKeyPin },
    identityDir: paths.identityDir,
    jwkPath,
    // A key file that does not match the pin fails the join (it is the install's own file), never falls back.
    refuseMismatchedKeyFile: true,
    reset: args.reset,
    fetch: doFetch,
  });
  if (args.tokenFile) await removeTokenFile(args.tokenFile, io.err);
  if (answer.status === 'pending') {
    io.out(`join request ${answer.requestId} awaits approval; run bcd join again in ${answer.retryAfterSeconds}s`);
    return 3;
  }
  if (bootstrap) {
    // Written only now: a failed join leaves no configuration naming an identity that does not exist.
    await mkdir(path.dirname(configPath), { recursive: true, mode: 0o755 });
    await writeFileAtomic(jwkPath, `${JSON.stringify(bootstrap.encryptionJwk)}\n`, 0o644);
    await writeFileAtomic(configPath, formatConfigToml({ ...bootstrap.config, site: answer.siteId }), 0o600);
  }
  io.out(`joined: node ${answer.nodeId} in site ${answer.siteId} (${paths.identityDir})`);
  return 0;
}
