import type { Command } from 'commander';
import type { NodeDetail } from '../../protocol/api/node-schemas';
import { certificateStanding } from '../../protocol/api/certificate-standing';
import { DomainError } from '../../protocol/errors';
import { enc } from '../client';
import { clientFor, tenantClientFor } from '../context';
import { printJson, printTable } from '../output';
import { wholeNumber } from '../options';
import { addNodeFilterOptions, nodeFilterOf, type NodeFilterOptions } from './node-filter-options';
import { csvFormat, writeDownload } from './download';

const labelText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
import { registerNodeLabelCommand } from './node-labels';

const printDetail = (n: NodeDetail) =>
  printTable(
    [n],
    [
      ['id', (x) => x.id],
      ['hostname', (x) => x.hostname],
      ['state', (x) => x.state],
      ['cordoned', (x) => x.cordoned],
      ['trust', (x) => x.trust],
      // The role the certificate carries (a ramdisk's row keeps its token's `discovery`).
      ['role', (x) => x.certificateRole ?? x.role],
      ['generation', (x) => x.identityGeneration],
      ['serial', (x) => x.certificate?.serial],
      ['expires', (x) => x.certificate?.notAfter],
      ['attestor', (x) => x.attestor],
      ['token', (x) => x.joinTokenId],
      [
        'admitted by',
        (x) => (x.admission ? `${x.admission.requestId} (${x.admission.decidedByName ?? x.admission.decidedBy ?? '-'})` : null),
      ],
      ['conditions', (x) => x.conditions.map((c) => c.type).join(',')],
    ],
  );

/** `nodes get`: the node, then its certificates newest first (the answer holds at most the newest 200). */
function printWithCertificates(n: NodeDetail) {
  printDetail(n);
  const shown = n.certificates.length < n.certificateCount ? ` (newest ${n.certificates.length} of ${n.certificateCount})` : '';
  process.stdout.write(`\nCertificates${shown}:\n`);
  const now = Date.now();
  printTable(n.certificates, [
    ['serial', (c) => c.serial],
    ['generation', (c) => c.identityGeneration],
    ['issued by', (c) => c.issuedBy],
    ['not before', (c) => c.notBefore],
    ['not after', (c) => c.notAfter],
    ['status', (c) => (c.revokedAt ? `revoked (${c.revocationReason ?? 'revoked'}) at ${c.revokedAt}` : certificateStanding(c, now))],
  ]);
}

export function registerNodeCommands(program: Command) {
  const nodes = program.command('nodes').description('Nodes: joined machines and their lifecycle');
  addNodeFilterOptions(
    nodes
      .command('list')
      .description("List a tenant's nodes: searched and filtered on the server, with the exact number that match")
      .requiredOption('--tenant <tenant>', 'tenant id or name'),
  )
    .option('--limit <n>', 'page size', wholeNumber(1, 500), 100)
    .option('--cursor <nodeId>', 'the page after this node')
    .option('--json', 'print JSON')
    .action(async (opts: NodeFilterOptions & { tenant: string; limit: number; cursor?: string; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const page = await client.get('nodes.list', `${tenantPath}/nodes`, {
        ...nodeFilterOf(opts),
        limit: opts.limit,
        cursor: opts.cursor,
      });
      if (opts.json) return printJson(page);
      printTable(page.items, [
        ['id', (n) => n.id],
        ['hostname', (n) => (typeof n.claims.hostname === 'string' ? n.claims.hostname : '')],
        ['pool', (n) => n.poolId],
        ['state', (n) => n.state],
        ['cordoned', (n) => n.cordoned],
        ['connected', (n) => n.session.connected],
        ['role', (n) => n.role],
        ['generation', (n) => n.identityGeneration],
        ['labels', (n) => labelText(n.labels)],
      ]);
      process.stdout.write(`${page.total} ${page.total === 1 ? 'node matches' : 'nodes match'}\n`);
      if (page.nextCursor) process.stdout.write(`More: --cursor ${page.nextCursor}\n`);
    });
  addNodeFilterOptions(
    nodes
      .command('export')
      .description('Export the nodes a filter selects as CSV (streamed; spreadsheet-safe)')
      .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)"),
  )
    .option('--format <format>', 'csv (the only format)', csvFormat, 'csv')
    .option('--output <file>', 'write to this file (default: standard output)')
    .action(async (opts: NodeFilterOptions & { tenant?: string; output?: string }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      await writeDownload(opts.output, (out) => client.download(`${tenantPath}/nodes/export.csv`, nodeFilterOf(opts), out));
    });
  nodes
    .command('get <nodeId>')
    .description('Show a node')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .option('--json', 'print JSON')
    .action(async (nodeId: string, opts: { tenant?: string; json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const node = await client.get('nodes.get', `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/nodes/${enc(nodeId)}`);
      if (opts.json) printJson(node);
      else printWithCertificates(node);
    });
  for (const [name, procedure, description] of [
    ['adopt', 'nodes.adopt', 'Adopt a node that is still adopting'],
    ['recheck', 'nodes.recheck', "Run the pool's acceptance checks on an adopting node again (a pass adopts it)"],
    ['cordon', 'nodes.cordon', 'Cordon a node: it takes no new work'],
    ['uncordon', 'nodes.uncordon', 'Uncordon a node'],
    ['revoke-identity', 'nodes.revokeIdentity', 'Revoke every certificate of a node; it must join again'],
    ['delete', 'nodes.delete', 'Delete a cordoned node (needs --yes); the machine can then join as new'],
  ] as const) {
    const command = nodes
      .command(`${name} <nodeId>`)
      .description(description)
      .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
      .option('--json', 'print JSON');
    if (name === 'delete') command.option('--yes', 'confirm the deletion');
    command.action(async (nodeId: string, opts: { tenant?: string; json?: boolean; yes?: boolean }, cmd: Command) => {
      if (name === 'delete' && !opts.yes)
        throw new DomainError('INVALID_ARGUMENT', 'Deleting a node cannot be undone; confirm with --yes', { field: 'yes' });
      const client = clientFor(cmd);
      const node = await client.post(procedure, `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/nodes/${enc(nodeId)}/${name}`, {});
      if (opts.json) return printJson(node);
      printDetail(node);
      // What revoke-identity did is the point of running it: name the certificates, or say there were none.
      if ('revokedSerials' in node)
        process.stdout.write(
          node.revokedSerials.length ? `revoked: ${node.revokedSerials.join(', ')}\n` : 'revoked: none (no live certificate)\n',
        );
    });
  }
  registerNodeLabelCommand(nodes);
}
