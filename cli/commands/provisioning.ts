import type { Command } from 'commander';
import { enc } from '../client';
import { tenantClientFor } from '../context';
import { writeNewSecretFile } from '../secret-file';
import { parseSha256Option } from './daemon';
import { parseTtl } from './join-tokens';
import { BASE_PATH } from '../../server/config/config';

/** `--ttl`: whole seconds (`3600`) or a duration (`1h`), 1m to 24h like every token. */
export function parseTtlSeconds(value: string): number {
  return /^\d{1,6}$/.test(value) ? parseTtl(`${value}s`) : parseTtl(value);
}

type UserDataOpts = {
  tenant?: string;
  node: string;
  pool?: string;
  ttl: number;
  output?: string;
  serverUrl?: string;
  sha256?: { amd64?: string; arm64?: string };
};

/** `provisioning user-data`: cloud-init user data joining a deployed machine back as one node. */
export function registerProvisioningCommands(program: Command) {
  program
    .command('provisioning')
    .description('Provisioning: join machines a deploy installed back as their nodes')
    .command('user-data')
    .description('Make cloud-init user data (it holds a single-use token): printed, or written to --output (0600)')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--node <nodeId>', 'the node the deployed machine joins back as')
    .option('--pool <poolId>', "the pool it joins into (default: the node's pool)")
    .requiredOption('--ttl <seconds>', 'how long the token lives: seconds or a duration, 1m to 24h', parseTtlSeconds)
    .option('--output <file>', 'write the user data to this new 0600 file instead of printing it')
    .option('--server-url <url>', 'the control plane the machine reaches (default: the one this CLI calls)')
    .option('--sha256 <digests>', "amd64=<hex>,arm64=<hex> of bcd (default: the server's own build)", parseSha256Option)
    .action(async (opts: UserDataOpts, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const serverUrl = opts.serverUrl ?? new URL(client.baseUrl.slice(0, client.baseUrl.length - BASE_PATH.length)).origin;
      const ask = () =>
        client.post('provisioning.userData', `${tenantPath}/nodes/${enc(opts.node)}/user-data`, {
          ...(opts.pool ? { poolId: opts.pool } : {}),
          ttlSeconds: opts.ttl,
          serverUrl,
          ...(opts.sha256 ? { sha256: opts.sha256 } : {}),
        });
      if (!opts.output) {
        process.stdout.write((await ask()).userData);
        return;
      }
      let tokenId = '';
      // The file is reserved first: a taken path fails before anything is minted.
      await writeNewSecretFile(opts.output, async () => {
        const answer = await ask();
        tokenId = answer.tokenId;
        return answer.userData;
      });
      process.stderr.write(`User data for node ${opts.node} (token ${tokenId}, single use) written to ${opts.output}\n`);
    });
}
