import { type Command, Option } from 'commander';
import { enc } from '../client';
import { tenantClientFor } from '../context';
import { printJson, printTable, printRows } from '../output';
import { addGetAndArchive } from './get-archive';

export function registerSiteCommands(program: Command) {
  const sites = program.command('sites').description('Sites: where machines are');
  sites
    .command('create')
    .description('Create a site')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .requiredOption('--name <name>', 'lower-case name')
    .option('--kind <kind>', 'platform (root tenant only) or custom')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; name: string; kind?: string; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const site = await client.post('sites.create', `${tenantPath}/sites`, {
        name: opts.name,
        ...(opts.kind ? { kind: opts.kind } : {}),
      });
      if (opts.json) printJson(site);
      else process.stdout.write(`Created site ${site.name} (${site.id}, ${site.kind})\n`);
    });
  sites
    .command('list')
    .description("List a tenant's sites")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--all', 'include archived sites')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; all?: boolean; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const { items } = await client.get('sites.list', `${tenantPath}/sites`, { includeArchived: opts.all });
      printRows(items, opts.json, [
        ['id', (s) => s.id],
        ['name', (s) => s.name],
        ['kind', (s) => s.kind],
        ['approvals', (s) => String(s.requiredApprovals)],
        ['archived', (s) => s.archivedAt],
      ]);
    });
  addGetAndArchive(sites, {
    noun: 'site',
    collection: 'sites',
    procedures: { get: 'sites.get', archive: 'sites.archive' },
    archiveNote: ' (its pools must be archived first)',
    print: (site) =>
      printTable(
        [site],
        [
          ['id', (s) => s.id],
          ['name', (s) => s.name],
          ['kind', (s) => s.kind],
          ['approvals', (s) => String(s.requiredApprovals)],
          // Off unless the site turns it on: an unlisted TPM is refused, not queued.
          ['tpm enrollment', (s) => (s.tpm.enrollment ? 'on' : 'off')],
          ['created', (s) => s.createdAt],
          ['archived', (s) => s.archivedAt],
        ],
      ),
  });
  sites
    .command('update <siteId>')
    .description("Change a site's discovery settings and how many approvals a join request needs")
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .addOption(
      new Option(
        '--discovery-approval <policy>',
        'unknown-machines: admit machines the site knows at once; always: hold every one',
      ).choices(['unknown-machines', 'always']),
    )
    .option('--pending-ttl <seconds>', 'how long a join request waits for a decision, in seconds', (v) => Number(v))
    .option('--max-pending <count>', 'how many join requests may wait at once; a full queue refuses new machines', (v) => Number(v))
    .addOption(
      new Option(
        '--tpm-enrollment <on|off>',
        'on: an activated TPM whose EK is neither vendor-rooted nor listed waits in the queue; off (the default): it is refused (vendor-rooted and listed EKs join either way)',
      ).choices(['on', 'off']),
    )
    .option('--tpm-pending-ttl <seconds>', "how long a TPM's join request waits for a decision, in seconds", (v) => Number(v))
    .option(
      '--tpm-allow-ek <hash>',
      'add an EK hash (hex SHA-256 of the EK public key) admitted without an operator; repeatable',
      collect,
      [],
    )
    .option('--tpm-disallow-ek <hash>', 'remove an EK hash from the allow-list; repeatable', collect, [])
    .option('--site-agent-cap <count>', "how many live discovery tokens the site's agents may hold at once (bcd site)", (v) => Number(v))
    .option('--two-person-approval', 'every join request needs approvals by two different people (a key acts as its creator)')
    .option('--no-two-person-approval', 'one approval admits (the default)')
    .option('--json', 'print JSON')
    .action(
      async (
        siteId: string,
        opts: {
          tenant?: string;
          discoveryApproval?: string;
          pendingTtl?: number;
          maxPending?: number;
          siteAgentCap?: number;
          twoPersonApproval?: boolean;
          tpmEnrollment?: string;
          tpmPendingTtl?: number;
          tpmAllowEk: string[];
          tpmDisallowEk: string[];
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
        const discovery = {
          ...(opts.discoveryApproval ? { approval: opts.discoveryApproval } : {}),
          ...(opts.pendingTtl !== undefined ? { pendingTtlSeconds: opts.pendingTtl } : {}),
          ...(opts.maxPending !== undefined ? { maxPendingRequests: opts.maxPending } : {}),
        };
        const tpm = {
          ...(opts.tpmEnrollment ? { enrollment: opts.tpmEnrollment === 'on' } : {}),
          ...(opts.tpmPendingTtl !== undefined ? { pendingTtlSeconds: opts.tpmPendingTtl } : {}),
          ...(opts.tpmAllowEk.length ? { addEkHashes: opts.tpmAllowEk } : {}),
          ...(opts.tpmDisallowEk.length ? { removeEkHashes: opts.tpmDisallowEk } : {}),
        };
        const approvals = opts.twoPersonApproval === undefined ? {} : { requiredApprovals: opts.twoPersonApproval ? 2 : 1 };
        const site = await client.post('sites.update', `${tenantPath}/sites/${enc(siteId)}/update`, {
          discovery,
          ...approvals,
          ...(Object.keys(tpm).length ? { tpm } : {}),
          ...(opts.siteAgentCap !== undefined ? { siteAgentTokenCap: opts.siteAgentCap } : {}),
        });
        if (opts.json) return printJson(site);
        process.stdout.write(
          `Site ${site.id}: discovery approval ${site.discovery.approval}, requests wait ${site.discovery.pendingTtlSeconds} s, at most ${site.discovery.maxPendingRequests} at once, ` +
            `${site.requiredApprovals === 2 ? 'two approvals (by two different people) per request' : 'one approval per request'}\n`,
        );
        process.stdout.write(
          `  tpm: enrollment ${site.tpm.enrollment ? 'on (unlisted TPMs wait in the queue)' : 'off (unlisted TPMs are refused)'}, requests wait ${site.tpm.pendingTtlSeconds} s, ${site.tpm.ekAllowList.length} EK hash(es) allowed\n`,
        );
      },
    );
}

const collect = (value: string, previous: string[]) => [...previous, value];
