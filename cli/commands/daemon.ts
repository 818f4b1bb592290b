import type { Command } from 'commander';
import { DomainError } from '../../protocol/errors';
import { enc } from '../client';
import { tenantClientFor } from '../context';

/** `--sha256 amd64=<hex>,arm64=<hex>` as the procedure's `sha256` object. */
export function parseSha256Option(value: string): { amd64?: string; arm64?: string } {
  const digests: Record<string, string> = {};
  for (const pair of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [arch, hex] = pair.split('=', 2);
    if ((arch !== 'amd64' && arch !== 'arm64') || !hex) {
      throw new DomainError('INVALID_ARGUMENT', `--sha256 takes amd64=<hex>,arm64=<hex>, not ${pair}`, { field: 'sha256' });
    }
    digests[arch] = hex.toLowerCase();
  }
  return digests;
}

/** `--release-pins P[,P]`: one pin, or several during a release key rotation. */
export function parseReleasePinsOption(value: string): string[] {
  const pins = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (pins.length === 0)
    throw new DomainError('INVALID_ARGUMENT', '--release-pins takes sha256/<base64>[,sha256/<base64>]', { field: 'releasePins' });
  return pins;
}

type InstallScriptOptions = {
  sha256?: { amd64?: string; arm64?: string };
  releaseManifest?: string;
  releasePins?: string[];
};

/** The digest source of `daemon install-script`: --sha256, or --release-manifest with --release-pins, never both. */
export function digestSource(opts: InstallScriptOptions) {
  if (opts.sha256 && (opts.releaseManifest || opts.releasePins)) {
    throw new DomainError('INVALID_ARGUMENT', '--sha256 and --release-manifest are exclusive: pass one', { field: 'sha256' });
  }
  if (Boolean(opts.releaseManifest) !== Boolean(opts.releasePins)) {
    const missing = opts.releaseManifest ? 'releasePins' : 'releaseManifestUrl';
    throw new DomainError('INVALID_ARGUMENT', '--release-manifest and --release-pins go together', { field: missing });
  }
  return { sha256: opts.sha256, releaseManifestUrl: opts.releaseManifest, releasePins: opts.releasePins };
}

export function registerDaemonCommands(program: Command) {
  const daemon = program.command('daemon').description('bcd, the daemon machines run');
  daemon
    .command('install-script')
    .description('Print an install script that installs bcd and joins a machine to a pool (holds no secret)')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant, which must own the pool)")
    .requiredOption('--pool <poolId>', 'pool id')
    .option('--site <siteId>', "site id (must be the pool's; default: the pool's)")
    .requiredOption('--gateway-url <url>', 'the gateway daemons dial, e.g. https://gw.eu.example.com')
    .requiredOption('--base-url <url>', 'the control plane the script downloads bcd from, e.g. https://compute.example.com')
    .option('--bcd-version <version>', "bcd's version (default: the server's)")
    .option('--sha256 <digests>', "amd64=<hex>,arm64=<hex> (default: the digests of the server's own build)", parseSha256Option)
    .option('--release-manifest <url>', 'instead of --sha256: the digests of this signed release manifest (https)')
    .option('--release-pins <pins>', 'the release key pins the manifest must be signed by: sha256/<base64>[,…]', parseReleasePinsOption)
    .action(
      async (
        opts: {
          tenant?: string;
          pool: string;
          site?: string;
          gatewayUrl: string;
          baseUrl: string;
          bcdVersion?: string;
        } & InstallScriptOptions,
        cmd: Command,
      ) => {
        const digests = digestSource(opts);
        const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
        const answer = await client.post('daemon.installScript', `${tenantPath}/pools/${enc(opts.pool)}/install-script`, {
          siteId: opts.site,
          gatewayUrl: opts.gatewayUrl,
          baseUrl: opts.baseUrl,
          bcdVersion: opts.bcdVersion,
          ...digests,
        });
        process.stdout.write(answer.script);
      },
    );
}
