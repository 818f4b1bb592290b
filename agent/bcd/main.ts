// bcd: the agent as one executable (scripts/build-bcd.mjs bundles this file and the agent code it imports).
import { parseArgs } from 'node:util';
import { runDoctor } from './doctor-command';
import { runNode } from './node-command';
import { runHelper } from '../helper/helper-command';
import { runJoin, type CommandIo } from './join-command';
import { agentExitCode, errorLine } from '../errors';
import { versionLine } from './version';
import { identifyTpm, withTpm } from '../tpm/identify';
import { setAgentLogDefault } from '../request-log';
import { runSiteCommand } from '../site/site-command';

const USAGE = `usage:
  bcd join [--config /etc/bcd/config.toml] [--server URL --serving-ca-pin P --join-signing-pin P --join-encryption-pin P]
           [--token-file F] [--reset --yes]        the token on standard input unless --token-file
           [--node-id N]                           a deploy's provisioned token: join back as node N
  bcd join --attestor tpm [--site SITE] [--pool POOL] [--tpm /dev/tpmrm0 | --tpm swtpm:HOST:PORT] [--no-wait]
           [--config F | --server URL and the three pins] [--reset --yes]
                                                   no token: the TPM attests this machine; waits for approval
  bcd node [--config F] [--tpm T]                  run the renewal loop (what bcd.service starts)
  bcd helper [--config F] [--tpm T]                as root, hold the TPM for bcd node under [helper]
                                                   (what bcd-helper.service starts)
  bcd site [--server URL --serving-ca-pin P --join-signing-pin P --join-encryption-pin P] [--token-file F]
           [--site-dir /var/lib/bcd-site] [--lease-listen 127.0.0.1:8470] [--boot-listen ADDR:PORT]
                                                   the site agent: joins with a site token, holds its session
                                                   and hands each PXE lease's machine a discovery token
  bcd doctor [--config F] [--json]                 one line per check, or one JSON report
  bcd tpm [--tpm /dev/tpmrm0 | --tpm swtpm:HOST:PORT]   the TPM's EK hash, for a site's or pool's allow-list
  bcd version`;

const io: CommandIo = { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) };

async function main(argv: string[]): Promise<number> {
  // One JSON line per request on stderr at `info`, unless BETTER_COMPUTE_LOG_LEVEL says otherwise.
  setAgentLogDefault('info');
  const [command, ...rest] = argv;
  switch (command) {
    case 'version':
    case '--version':
      io.out(versionLine());
      return 0;
    case 'join': {
      const { values } = parseArgs({
        args: rest,
        strict: true,
        options: {
          config: { type: 'string' },
          server: { type: 'string' },
          'serving-ca-pin': { type: 'string' },
          'join-signing-pin': { type: 'string' },
          'join-encryption-pin': { type: 'string' },
          'token-file': { type: 'string' },
          reset: { type: 'boolean' },
          yes: { type: 'boolean' },
          attestor: { type: 'string' },
          site: { type: 'string' },
          pool: { type: 'string' },
          tpm: { type: 'string' },
          'no-wait': { type: 'boolean' },
          'node-id': { type: 'string' },
        },
      });
      return runJoin(
        {
          config: values.config,
          server: values.server,
          servingCaPin: values['serving-ca-pin'],
          joinSigningPin: values['join-signing-pin'],
          joinEncryptionPin: values['join-encryption-pin'],
          tokenFile: values['token-file'],
          reset: values.reset,
          yes: values.yes,
          attestor: values.attestor,
          site: values.site,
          pool: values.pool,
          tpm: values.tpm,
          noWait: values['no-wait'],
          nodeId: values['node-id'],
        },
        io,
      );
    }
    case 'site':
      return runSiteCommand(rest, io);
    case 'doctor': {
      const { values } = parseArgs({ args: rest, strict: true, options: { config: { type: 'string' }, json: { type: 'boolean' } } });
      return runDoctor(values, io);
    }
    case 'tpm': {
      const { values } = parseArgs({ args: rest, strict: true, options: { tpm: { type: 'string' } } });
      const identity = await withTpm(values.tpm ?? process.env.BCD_TPM, identifyTpm);
      io.out(`ek hash: ${identity.ekHash}`);
      io.out(
        `ek: ${identity.ekKind === 'rsa' ? 'RSA-2048' : 'ECC P-256'}, ${identity.ekCertificateIssuer ? `certificate issued by ${identity.ekCertificateIssuer}` : 'no EK certificate'}`,
      );
      return 0;
    }
    case 'helper':
      return runHelper(
        parseArgs({ args: rest, strict: true, options: { config: { type: 'string' }, tpm: { type: 'string' } } }).values,
        io,
      );
    case 'node':
      return runNode(
        parseArgs({ args: rest, strict: true, options: { config: { type: 'string' }, once: { type: 'boolean' }, tpm: { type: 'string' } } })
          .values,
        io,
      );
    default:
      io.err(USAGE);
      return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
}

// A failure is one line on stderr and the exit code of agent/errors.ts's table (2 for usage and config, else 1).
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    io.err(`bcd: ${errorLine(error)}`);
    process.exit(agentExitCode(error));
  },
);
