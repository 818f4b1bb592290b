import { type Command, InvalidArgumentError } from 'commander';
import { collectLabel, labelsField } from '../label-options';
import type { JoinRequestRecord } from '../../protocol/api/join-request-schemas';
import { DomainError } from '../../protocol/errors';
import type { RequestFilter } from '../../server/requests/filter';
import { parseLifetime } from '../../lib/duration';
import type { Answer } from '../api';
import { MalformedAnswerError } from '../answer';
import { enc, type ApiClient } from '../client';
import { clientFor } from '../context';
import { printJson, printRows } from '../output';
import { progressBar } from '../progress';

type Ref = { tenant?: string; pool: string };

function parseSeconds(value: string): number {
  if (!/^\d{1,6}$/.test(value) || Number(value) < 60 || Number(value) > 86_400)
    throw new InvalidArgumentError('use whole seconds, 60 to 86400');
  return Number(value);
}

async function poolPath(client: ApiClient, opts: Ref) {
  return `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/pools/${enc(opts.pool)}/join-requests`;
}

async function listAll(client: ApiClient, path: string, state: string, filter: RequestFilter = {}): Promise<JoinRequestRecord[]> {
  const items: JoinRequestRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.get('joinRequests.list', path, { state, limit: 200, cursor, ...filter });
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

function parseAge(value: string): number {
  const seconds = parseLifetime(value);
  if (!Number.isFinite(seconds)) throw new InvalidArgumentError('use a duration such as 30m, 2h or 3600');
  return seconds;
}

type FilterOpts = {
  search?: string;
  attestor?: string;
  vouchedBy?: string;
  trusted?: boolean;
  untrusted?: boolean;
  olderThan?: number;
  newerThan?: number;
};

/** The queue's filter options, shared by `list` and `--all-pending` (the console's search and filters). */
const withFilters = (cmd: Command) =>
  cmd
    .option('--search <text>', 'MAC, serial, product UUID, hostname, IP or request id (any part, any case)')
    .option('--attestor <name>', 'only requests of this attestor (discovery, tpm)')
    .option('--vouched-by <identity>', 'only requests whose discovery token this identity minted')
    .option('--trusted', 'only requests whose hardware key is trusted')
    .option('--untrusted', 'only requests whose hardware key is missing or untrusted')
    .option('--older-than <age>', 'only requests that asked at least this long ago (30m, 2h, 3600)', parseAge)
    .option('--newer-than <age>', 'only requests that asked at most this long ago', parseAge);

function filterOf(opts: FilterOpts): RequestFilter {
  if (opts.trusted && opts.untrusted) throw new InvalidArgumentError('pass --trusted or --untrusted, not both');
  const filter: RequestFilter = {
    search: opts.search,
    attestor: opts.attestor,
    vouchedBy: opts.vouchedBy,
    trustedKey: opts.trusted ? true : opts.untrusted ? false : undefined,
    minAgeSeconds: opts.olderThan,
    maxAgeSeconds: opts.newerThan,
  };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined));
}

/** What a decision acts on: one request id, or --all-pending narrowed by the filters (which need it). */
function decisionFilterOf(requestId: string | undefined, opts: FilterOpts & { allPending?: boolean }): RequestFilter {
  if (!requestId === !opts.allPending) throw new InvalidArgumentError('name one request id, or pass --all-pending');
  const filter = filterOf(opts);
  if (requestId && Object.keys(filter).length) throw new InvalidArgumentError('the filters go with --all-pending, not with a request id');
  return filter;
}

/**
 * Decides every pending request that matches the filter, a page of 200 per call, on the server: only those
 * counted before the first call (`createdUpTo`), so a machine arriving meanwhile is not decided unseen.
 */
async function decideAllMatching<P extends 'joinRequests.approveMany' | 'joinRequests.rejectMany'>(
  client: ApiClient,
  path: string,
  procedure: P,
  filter: RequestFilter,
  body: Record<string, unknown>,
  decided: (answer: Answer<P>) => JoinRequestRecord[],
) {
  const verb = procedure === 'joinRequests.approveMany' ? 'approve' : 'reject';
  const first = await client.get('joinRequests.list', path, { state: 'pending', limit: 1, ...filter });
  const bar = progressBar(verb === 'approve' ? 'Approving' : 'Rejecting', first.total);
  const done: JoinRequestRecord[] = [];
  const skipped: string[] = [];
  for (;;) {
    const answer = await client.post(procedure, `${path}/${verb}`, { ...body, matching: { ...filter, createdUpTo: first.asOf } });
    done.push(...decided(answer));
    skipped.push(...answer.skipped);
    bar.update(Math.min(done.length, first.total));
    if (!answer.remaining || !decided(answer).length) break;
  }
  bar.done();
  return { done, skipped, matched: first.total };
}

const claimed = (r: JoinRequestRecord) => {
  const c = r.claims as { productSerial?: string; hostname?: string };
  return [c.hostname, c.productSerial].filter(Boolean).join(' ');
};

/** A tpm enrollment's EK hash (shortened), the EK certificate's issuer or "no EK certificate". */
const tpmShown = (r: JoinRequestRecord) => (r.tpm ? `ek ${r.tpm.ekHash.slice(0, 16)}… ${r.tpm.ekIssuer}` : null);

/** "1 of 2 (Ada)" for a pending request of a two-person site; empty otherwise. */
const approvalsOf = (r: JoinRequestRecord) =>
  r.requiredApprovals === 2 && r.state === 'pending'
    ? `${r.firstApproval ? 1 : 0} of 2${r.firstApproval ? ` (${r.firstApproval.byName ?? r.firstApproval.by})` : ''}`
    : '';

/** `join-requests list|get|approve|reject|watch` (joining.md "Join requests and approvals"). */
export function registerJoinRequestCommands(program: Command) {
  const requests = program.command('join-requests').description('Join requests: machines waiting for an operator to decide');
  const withRef = (cmd: Command) =>
    cmd.option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)").requiredOption('--pool <poolId>', 'the pool');

  withFilters(withRef(requests.command('list').description("List a pool's join requests and its site's unclaimed ones, newest first")))
    .option('--state <state>', 'pending (default), approved, rejected, expired, consumed or all', 'pending')
    .option('--json', 'print JSON')
    .action(async (opts: Ref & FilterOpts & { state: string; json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const items = await listAll(client, await poolPath(client, opts), opts.state, filterOf(opts));
      printRows(
        items,
        opts.json,
        [
          ['id', (r) => r.id],
          ['state', (r) => r.state],
          ['attestor', (r) => r.attestor],
          ['mac', (r) => r.mac],
          ['ip', (r) => r.ip],
          ['claims', claimed],
          ['tpm', tpmShown],
          ['vouched by', (r) => r.vouchedBy],
          ['approvals', approvalsOf],
          ['expires', (r) => r.expiresAt],
        ],
        `No ${opts.state === 'all' ? '' : `${opts.state} `}join requests.`,
      );
    });

  withRef(requests.command('get <requestId>').description('Show one join request'))
    .option('--json', 'print JSON')
    .action(async (requestId: string, opts: Ref & { json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const request = await client.get('joinRequests.get', `${await poolPath(client, opts)}/${enc(requestId)}`);
      if (opts.json) return printJson(request);
      for (const [k, v] of Object.entries(request))
        process.stdout.write(`${k}: ${typeof v === 'object' && v !== null ? JSON.stringify(v) : (v ?? '-')}\n`);
    });

  withFilters(withRef(requests.command('approve [requestId]').description('Approve a request (or --all-pending) into the pool')))
    .option('--all-pending', 'approve every pending request the pool sees (narrowed by the filters), a page (200) per call')
    .option('--ttl <seconds>', 'how long the approval admits the retry, 60 to 86400 seconds (default 3600)', parseSeconds)
    .option('--reason <text>', 'why, for the audit log')
    .option('--label <key=value>', "a label the node gets when it joins, over its token's (repeatable)", collectLabel)
    .option('--json', 'print JSON')
    .action(
      async (
        requestId: string | undefined,
        opts: Ref & FilterOpts & { allPending?: boolean; ttl?: number; reason?: string; label?: Record<string, string>; json?: boolean },
        cmd: Command,
      ) => {
        const filter = decisionFilterOf(requestId, opts);
        const client = clientFor(cmd);
        const path = await poolPath(client, opts);
        const decision = {
          ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}),
          ...(opts.reason ? { reason: opts.reason } : {}),
          ...labelsField(opts.label),
        };
        if (requestId) {
          const approved = await client.post('joinRequests.approve', `${path}/${enc(requestId)}/approve`, decision);
          if (opts.json) return printJson(approved);
          if (approved.state === 'pending') {
            process.stdout.write(
              `Recorded your approval of ${approved.id} (${approved.approvals} of ${approved.requiredApprovals}), not yet effective: its site needs a second approval by another person (not your session or any of your keys) into ${approved.firstApproval?.poolId}\n`,
            );
          } else process.stdout.write(`Approved ${approved.id} into ${approved.poolId} until ${approved.expiresAt}\n`);
          return;
        }
        // On a two-person site a first approval leaves the request pending (`recorded`): it moved all the same.
        const all = await decideAllMatching(client, path, 'joinRequests.approveMany', filter, decision, (a) => [
          ...a.approved,
          ...a.recorded,
        ]);
        const approved = all.done.filter((r) => r.state !== 'pending');
        const recorded = all.done.filter((r) => r.state === 'pending');
        const { skipped, matched } = all;
        if (opts.json) return printJson({ approved, recorded, skipped });
        const left = matched - all.done.length - skipped.length;
        process.stdout.write(
          `Approved ${approved.length} request(s)${recorded.length ? `; recorded your approval of ${recorded.length} that need a second one (1 of 2)` : ''}` +
            `${skipped.length ? `; ${skipped.length} were decided or expired meanwhile` : ''}` +
            `${left > 0 ? `; ${left} left pending: their retry would be refused (token revoked, expired or used, or the pool's joinAttestors), or you approved them first already` : ''}\n`,
        );
      },
    );

  withFilters(
    withRef(requests.command('reject [requestId]').description('Reject a request (or --all-pending; also withdraws an unused approval)')),
  )
    .option('--all-pending', 'reject every pending request the pool sees (narrowed by the filters), a page (200) per call')
    .option('--reason <text>', 'why (required: a rejection is final; kept in the audit log and shown in the queue)')
    .option('--json', 'print JSON')
    .action(
      async (
        requestId: string | undefined,
        opts: Ref & FilterOpts & { allPending?: boolean; reason?: string; json?: boolean },
        cmd: Command,
      ) => {
        const filter = decisionFilterOf(requestId, opts);
        const reason = opts.reason?.trim();
        // Said on stderr (exit 2), before anything is sent: a rejection is final, so it carries a reason.
        if (!reason) throw new DomainError('INVALID_ARGUMENT', 'a rejection is final: say why with --reason <text>', { field: 'reason' });
        const client = clientFor(cmd);
        const path = await poolPath(client, opts);
        if (!requestId) {
          const { done: rejected, skipped } = await decideAllMatching(
            client,
            path,
            'joinRequests.rejectMany',
            filter,
            { reason },
            (a) => a.rejected,
          );
          if (opts.json) return printJson({ rejected, skipped });
          process.stdout.write(
            `Rejected ${rejected.length} request(s)${skipped.length ? `; ${skipped.length} were decided or expired meanwhile` : ''}\n`,
          );
          return;
        }
        const rejected = await client.post('joinRequests.reject', `${path}/${enc(requestId)}/reject`, { reason });
        if (opts.json) return printJson(rejected);
        process.stdout.write(`Rejected ${rejected.id}\n`);
      },
    );

  withRef(requests.command('watch').description("Print changes of the pool's queue as they happen (Ctrl-C ends)"))
    .option('--json', 'print each changed request as a JSON line')
    .action(async (opts: Ref & { json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const tenantId = await client.tenantId(opts.tenant);
      const path = await poolPath(client, opts);
      for await (const change of client.subscribe('joinRequests.onChange', { tenantId, poolId: opts.pool })) {
        for (const id of change.requestIds) {
          // A request this pool cannot see (another pool's, decided away) is skipped; a malformed answer is not.
          const request = await client.get('joinRequests.get', `${path}/${enc(id)}`).catch((error: unknown) => {
            if (error instanceof MalformedAnswerError) throw error;
            return null;
          });
          if (!request) continue;
          if (opts.json) process.stdout.write(JSON.stringify(request) + '\n');
          else
            process.stdout.write(`${new Date().toISOString()} ${request.id} ${request.state} ${request.mac ?? ''} ${claimed(request)}\n`);
        }
      }
    });
}
