import { type Command, InvalidArgumentError } from 'commander';
import type { ApprovedJoinRequests, JoinRequestPage, JoinRequestRecord } from '../../server/requests/schemas';
import { enc, type ApiClient } from '../client';
import { clientFor } from '../context';
import { printJson, printTable } from '../output';

type Ref = { tenant?: string; pool: string };

function parseSeconds(value: string): number {
  if (!/^\d{1,6}$/.test(value) || Number(value) < 60 || Number(value) > 86_400) throw new InvalidArgumentError('use whole seconds, 60 to 86400');
  return Number(value);
}

async function poolPath(client: ApiClient, opts: Ref) {
  return `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/pools/${enc(opts.pool)}/join-requests`;
}

async function listAll(client: ApiClient, path: string, state: string): Promise<JoinRequestRecord[]> {
  const items: JoinRequestRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.get<JoinRequestPage>(path, { state, limit: 200, cursor });
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

const claimed = (r: JoinRequestRecord) => {
  const c = r.claims as { productSerial?: string; hostname?: string };
  return [c.hostname, c.productSerial].filter(Boolean).join(' ');
};

/** `join-requests list|get|approve|reject|watch` (joining.md "Join requests and approvals"). */
export function registerJoinRequestCommands(program: Command) {
  const requests = program.command('join-requests').description('Join requests: machines waiting for an operator to decide');
  const withRef = (cmd: Command) => cmd.option('--tenant <tenant>', 'tenant id or name (default: the API key\'s tenant)').requiredOption('--pool <poolId>', 'the pool');

  withRef(requests.command('list').description("List a pool's join requests and its site's unclaimed ones, newest first"))
    .option('--state <state>', 'pending (default), approved, rejected, expired, consumed or all', 'pending')
    .option('--json', 'print JSON')
    .action(async (opts: Ref & { state: string; json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const items = await listAll(client, await poolPath(client, opts), opts.state);
      if (opts.json) return printJson(items);
      printTable(
        items,
        [
          ['id', (r) => r.id],
          ['state', (r) => r.state],
          ['attestor', (r) => r.attestor],
          ['mac', (r) => r.mac],
          ['ip', (r) => r.ip],
          ['claims', claimed],
          ['vouched by', (r) => r.vouchedBy],
          ['expires', (r) => r.expiresAt],
        ],
        `No ${opts.state === 'all' ? '' : `${opts.state} `}join requests.`,
      );
    });

  withRef(requests.command('get <requestId>').description('Show one join request'))
    .option('--json', 'print JSON')
    .action(async (requestId: string, opts: Ref & { json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const request = await client.get<JoinRequestRecord>(`${await poolPath(client, opts)}/${enc(requestId)}`);
      if (opts.json) return printJson(request);
      for (const [k, v] of Object.entries(request)) process.stdout.write(`${k}: ${typeof v === 'object' && v !== null ? JSON.stringify(v) : v ?? '-'}\n`);
    });

  withRef(requests.command('approve [requestId]').description('Approve a request (or --all-pending) into the pool'))
    .option('--all-pending', 'approve every pending request the pool sees, a page (200) per call')
    .option('--ttl <seconds>', 'how long the approval admits the retry, 60 to 86400 seconds (default 3600)', parseSeconds)
    .option('--reason <text>', 'why, for the audit log')
    .option('--json', 'print JSON')
    .action(async (requestId: string | undefined, opts: Ref & { allPending?: boolean; ttl?: number; reason?: string; json?: boolean }, cmd: Command) => {
      if (!requestId === !opts.allPending) throw new InvalidArgumentError('name one request id, or pass --all-pending');
      const client = clientFor(cmd);
      const path = await poolPath(client, opts);
      const decision = { ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}), ...(opts.reason ? { reason: opts.reason } : {}) };
      if (requestId) {
        const approved = await client.post<JoinRequestRecord>(`${path}/${enc(requestId)}/approve`, decision);
        if (opts.json) return printJson(approved);
        process.stdout.write(`Approved ${approved.id} into ${approved.poolId} until ${approved.expiresAt}\n`);
        return;
      }
      const approved: JoinRequestRecord[] = [];
      const skipped: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.get<JoinRequestPage>(path, { state: 'pending', limit: 200, cursor });
        cursor = page.nextCursor ?? undefined;
        if (!page.items.length) break;
        const result = await client.post<ApprovedJoinRequests>(`${path}/approve`, { ...decision, requestIds: page.items.map((r) => r.id) });
        approved.push(...result.approved);
        skipped.push(...result.skipped);
      } while (cursor);
      if (opts.json) return printJson({ approved, skipped });
      process.stdout.write(`Approved ${approved.length} request(s)${skipped.length ? `; ${skipped.length} were decided or expired meanwhile` : ''}\n`);
    });

  withRef(requests.command('reject <requestId>').description('Reject a request (also withdraws an unused approval)'))
    .option('--reason <text>', 'why, for the audit log')
    .option('--json', 'print JSON')
    .action(async (requestId: string, opts: Ref & { reason?: string; json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const rejected = await client.post<JoinRequestRecord>(`${await poolPath(client, opts)}/${enc(requestId)}/reject`, opts.reason ? { reason: opts.reason } : {});
      if (opts.json) return printJson(rejected);
      process.stdout.write(`Rejected ${rejected.id}\n`);
    });

  withRef(requests.command('watch').description("Print changes of the pool's queue as they happen (Ctrl-C ends)"))
    .option('--json', 'print each changed request as a JSON line')
    .action(async (opts: Ref & { json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const tenantId = await client.tenantId(opts.tenant);
      const path = await poolPath(client, opts);
      for await (const change of client.subscribe<{ requestIds: string[] }>('joinRequests.onChange', { tenantId, poolId: opts.pool })) {
        for (const id of change.requestIds) {
          const request = await client.get<JoinRequestRecord>(`${path}/${enc(id)}`).catch(() => null);
          if (!request) continue;
          if (opts.json) process.stdout.write(JSON.stringify(request) + '\n');
          else process.stdout.write(`${new Date().toISOString()} ${request.id} ${request.state} ${request.mac ?? ''} ${claimed(request)}\n`);
        }
      }
    });
}
