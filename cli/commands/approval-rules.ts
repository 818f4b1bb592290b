import { type Command, Option } from 'commander';
import { collectLabel, labelsField } from '../label-options';
import { formatLabelList } from '../../protocol/api/labels';
import type { RuleRecord } from '../../server/rules/schemas';
import { DomainError } from '../../protocol/errors';
import type { ApiClient } from '../client';
import { clientFor } from '../context';
import { printJson, printTable } from '../output';
import { sitePath } from './site-scoped-tokens';

/** Repeatable list options: `--serial A --serial B` or `--serial A,B`. */
const collect = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
];

interface RuleOptions {
  tenant?: string;
  site: string;
  name?: string;
  action?: 'approve' | 'reject' | 'leave';
  pool?: string;
  macPrefix?: string[];
  serial?: string[];
  productUuid?: string[];
  gpuUuid?: string[];
  hostname?: string;
  subnet?: string[];
  vouchedBy?: string[];
  attestor?: string;
  vendor?: string[];
  model?: string[];
  maxAdmissions?: number;
  validUntil?: string;
  enabled?: boolean;
  label?: Record<string, string>;
  json?: boolean;
}

/** The options every command that writes a rule (create, update, dry-run) takes. */
function withRuleOptions(command: Command): Command {
  return command
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--site <siteId>', 'the site whose discovery joins the rule decides')
    .option('--name <name>', 'what the queue shows as "decided by rule <name>"')
    .addOption(
      new Option('--action <action>', 'approve into --pool, reject, or leave for a person').choices(['approve', 'reject', 'leave']),
    )
    .option('--pool <poolId>', 'approve: the pool the machine is admitted into')
    .option('--mac-prefix <prefix>', 'vouched MAC or OUI prefix such as 3c:ec:ef (repeatable, or comma-separated)', collect)
    .option('--serial <serial>', 'claimed product, board or chassis serial (repeatable)', collect)
    .option('--product-uuid <uuid>', 'claimed product UUID (repeatable)', collect)
    .option('--gpu-uuid <uuid>', 'claimed GPU UUID (repeatable)', collect)
    .option('--hostname <pattern>', 'claimed hostname, with * and ? wildcards')
    .option('--subnet <cidr>', 'the vouched lease address is in this block (repeatable)', collect)
    .option('--vouched-by <actor>', 'who minted the discovery token, such as module:boot (repeatable)', collect)
    .addOption(new Option('--attestor <attestor>', 'the join attestor').choices(['discovery']))
    .option('--vendor <pattern>', 'claimed DMI sysVendor, with wildcards (repeatable)', collect)
    .option('--model <pattern>', 'claimed DMI productName, with wildcards (repeatable)', collect)
    .option('--max-admissions <count>', 'approve: stop after this many admissions', (v) => Number(v))
    .option('--valid-until <time>', 'stop deciding at this time (ISO 8601, with an offset or Z)')
    .option(
      '--label <key=value>',
      "approve: a label the nodes it admits get, over their token's (repeatable; on update, the new set)",
      collectLabel,
    )
    .option('--json', 'print JSON');
}

type Match = Record<string, unknown>;

/** The conditions named on the command line, over `base` (an update keeps what it does not name). */
function matchOf(opts: RuleOptions, base: Match = {}): Match {
  const given: Match = {
    macPrefixes: opts.macPrefix,
    serials: opts.serial,
    productUuids: opts.productUuid,
    gpuUuids: opts.gpuUuid,
    hostnamePattern: opts.hostname,
    subnets: opts.subnet,
    vouchedBy: opts.vouchedBy,
    attestor: opts.attestor,
    vendors: opts.vendor,
    models: opts.model,
  };
  const match = { ...base };
  for (const [key, value] of Object.entries(given)) if (value !== undefined) match[key] = value;
  return match;
}

function bodyOf(opts: RuleOptions, base?: RuleRecord): Record<string, unknown> {
  const action = opts.action ?? base?.action;
  const name = opts.name ?? base?.name;
  if (!name) throw new DomainError('INVALID_ARGUMENT', 'Name the rule with --name', { field: 'name' });
  if (!action) throw new DomainError('INVALID_ARGUMENT', 'Say what the rule does with --action approve|reject|leave', { field: 'action' });
  const poolId = action === 'approve' ? (opts.pool ?? base?.poolId ?? undefined) : undefined;
  const maxAdmissions = action === 'approve' ? (opts.maxAdmissions ?? base?.maxAdmissions ?? undefined) : undefined;
  const validUntil = opts.validUntil ?? base?.validUntil ?? undefined;
  return {
    name,
    action,
    match: matchOf(opts, base?.match),
    ...(poolId ? { poolId } : {}),
    ...(maxAdmissions !== undefined ? { maxAdmissions } : {}),
    ...(validUntil ? { validUntil } : {}),
    ...(opts.enabled !== undefined ? { enabled: opts.enabled } : {}),
    ...(action === 'approve' ? labelsField(opts.label) : {}),
  };
}

const printRules = (items: RuleRecord[]) =>
  printTable(
    items,
    [
      ['#', (r) => r.position],
      ['id', (r) => r.id],
      ['name', (r) => r.name],
      ['action', (r) => (r.action === 'approve' ? `approve → ${r.poolId}` : r.action)],
      ['match', (r) => r.match],
      ['admitted', (r) => (r.maxAdmissions === null ? r.admissions : `${r.admissions}/${r.maxAdmissions}`)],
      ['valid until', (r) => r.validUntil],
      ['enabled', (r) => (r.enabled ? 'yes' : 'no')],
      ['labels', (r) => formatLabelList(r.labels)],
    ],
    'No approval rules.',
  );

async function findRule(client: ApiClient, path: string, ruleId: string): Promise<RuleRecord> {
  const { items } = await client.get('approvalRules.list', path);
  const rule = items.find((r) => r.id === ruleId);
  if (!rule) throw new DomainError('NOT_FOUND', `Rule ${ruleId} not found`);
  return rule;
}

/** `approval-rules`: a site's ordered rules that decide discovery joins in their own join transaction. */
export function registerApprovalRuleCommands(program: Command) {
  const rules = program.command('approval-rules').description("A site's approval rules: decide PXE machines without a person");
  const scope = async (cmd: Command, opts: { tenant?: string; site: string }) => {
    const client = clientFor(cmd);
    return { client, path: sitePath(await client.tenantId(opts.tenant), opts.site, 'approval-rules') };
  };

  rules
    .command('list')
    .description("List a site's rules in the order they decide")
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--site <siteId>', 'the site')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant?: string; site: string; json?: boolean }, cmd: Command) => {
      const { client, path } = await scope(cmd, opts);
      const { items } = await client.get('approvalRules.list', path);
      if (opts.json) return printJson(items);
      printRules(items);
    });

  withRuleOptions(rules.command('create').description('Append a rule (it decides after the rules before it)'))
    .option('--disabled', 'create it switched off')
    .action(async (opts: RuleOptions & { disabled?: boolean }, cmd: Command) => {
      const { client, path } = await scope(cmd, opts);
      const rule = await client.post('approvalRules.create', path, { ...bodyOf({ ...opts, enabled: opts.disabled ? false : undefined }) });
      if (opts.json) return printJson(rule);
      process.stdout.write(`Created rule ${rule.name} (${rule.id}) at position ${rule.position}\n`);
    });

  withRuleOptions(rules.command('update <ruleId>').description('Change a rule; conditions not named keep their values'))
    .option('--enable', 'switch the rule on')
    .option('--disable', 'switch the rule off (it keeps its place and count)')
    .option('--clear-match', 'drop every condition not named on this command line')
    .action(async (ruleId: string, opts: RuleOptions & { enable?: boolean; disable?: boolean; clearMatch?: boolean }, cmd: Command) => {
      if (opts.enable && opts.disable) throw new DomainError('INVALID_ARGUMENT', 'Give --enable or --disable, not both');
      const { client, path } = await scope(cmd, opts);
      const current = await findRule(client, path, ruleId);
      const base = opts.clearMatch ? { ...current, match: {} } : current;
      const enabled = opts.enable ? true : opts.disable ? false : undefined;
      const rule = await client.post(
        'approvalRules.update',
        `${path}/${encodeURIComponent(ruleId)}/update`,
        bodyOf({ ...opts, enabled }, base),
      );
      if (opts.json) return printJson(rule);
      process.stdout.write(`Updated rule ${rule.name} (${rule.id})${rule.enabled ? '' : ', disabled'}\n`);
    });

  rules
    .command('move <ruleId>')
    .description('Move a rule to a position (1 decides first)')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--site <siteId>', 'the site')
    .requiredOption('--position <n>', 'the new position, from 1', (v) => Number(v))
    .option('--json', 'print JSON')
    .action(async (ruleId: string, opts: { tenant?: string; site: string; position: number; json?: boolean }, cmd: Command) => {
      const { client, path } = await scope(cmd, opts);
      const { items } = await client.post('approvalRules.move', `${path}/${encodeURIComponent(ruleId)}/move`, {
        position: opts.position,
      });
      if (opts.json) return printJson(items);
      printRules(items);
    });

  rules
    .command('delete <ruleId>')
    .description('Delete a rule: it stops deciding at once')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--site <siteId>', 'the site')
    .option('--json', 'print JSON')
    .action(async (ruleId: string, opts: { tenant?: string; site: string; json?: boolean }, cmd: Command) => {
      const { client, path } = await scope(cmd, opts);
      const rule = await client.post('approvalRules.delete', `${path}/${encodeURIComponent(ruleId)}/delete`, {});
      if (opts.json) return printJson(rule);
      process.stdout.write(`Deleted rule ${rule.name} (${rule.id})\n`);
    });

  withRuleOptions(
    rules.command('dry-run').description('What a rule would do with the pending requests and the last 7 days (saves nothing)'),
  )
    .option('--rule <ruleId>', 'dry-run an edit of this rule in its place (unnamed conditions keep their values)')
    .action(async (opts: RuleOptions & { rule?: string }, cmd: Command) => {
      const { client, path } = await scope(cmd, opts);
      const base = opts.rule ? await findRule(client, path, opts.rule) : undefined;
      const answer = await client.post('approvalRules.dryRun', `${path}/dry-run`, {
        ...bodyOf(opts, base),
        ...(opts.rule ? { ruleId: opts.rule } : {}),
      });
      if (opts.json) return printJson(answer);
      const sources = answer.matchedOn
        .map((m) => `${m.field} (${m.source === 'vouched' ? 'vouched by the boot step' : "the machine's claim"})`)
        .join(', ');
      process.stdout.write(`Matches on ${sources}. Of ${answer.considered} requests, ${answer.items.length} match:\n`);
      printTable(
        answer.items,
        [
          ['request', (i) => i.requestId],
          ['state', (i) => i.state],
          ['mac', (i) => i.mac],
          ['hostname', (i) => i.hostname],
          ['would', (i) => (i.decidedEarlierBy ? `none: ${i.decidedEarlierBy} decides first` : i.action)],
        ],
        'None.',
      );
    });
}
