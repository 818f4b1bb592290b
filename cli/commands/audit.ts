import type { Command } from 'commander';
import { tenantClientFor } from '../context';
import { csvFormat, writeDownload } from './download';

/** `audit export`: a tenant's audit log as CSV, filtered as the console's audit page (newest first, streamed). */
export function registerAuditCommands(program: Command) {
  const audit = program.command('audit').description('The audit log: who did what, when and why');
  audit
    .command('export')
    .description('Export the audit log as CSV (streamed; spreadsheet-safe; at most 100,000 entries, newest first)')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .option('--format <format>', 'csv (the only format)', csvFormat, 'csv')
    .option('--action <text>', 'part of the action (join-token., revoked)')
    .option('--action-equals <action>', 'exactly this action')
    .option('--actor <text>', "part of the actor or the operator's email")
    .option('--actor-equals <actor>', 'exactly this actor (operator:op_…, api-key:ak_…)')
    .option('--since <time>', 'only entries at or after this instant (RFC 3339)')
    .option('--until <time>', 'only entries before this instant (RFC 3339)')
    .option('--output <file>', 'write to this file (default: standard output)')
    .action(
      async (
        opts: {
          tenant?: string;
          action?: string;
          actionEquals?: string;
          actor?: string;
          actorEquals?: string;
          since?: string;
          until?: string;
          output?: string;
        },
        cmd: Command,
      ) => {
        const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
        const query = {
          action: opts.action,
          actionEquals: opts.actionEquals,
          actor: opts.actor,
          actorEquals: opts.actorEquals,
          since: opts.since,
          until: opts.until,
        };
        await writeDownload(opts.output, (out) => client.download(`${tenantPath}/audit/export.csv`, query, out));
      },
    );
}
