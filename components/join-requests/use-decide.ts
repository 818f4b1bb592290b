'use client';

import { useState, type Dispatch, type SetStateAction } from 'react';
import { toApiError } from '@/lib/api-errors';
import type { Pool, Tenant } from '@/lib/api-types';
import { decidedElsewhere } from '@/lib/join-request-queue';
import { useTRPCClient } from '@/lib/trpc';
import type { RequestFilter } from '@/protocol/api/join-request-filter';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';
import type { Decision } from './decide-dialog';

/**
 * The pending queue's filter with the server's count of every match and the time of that count: what
 * "select all matching" decides, on the server, in pages of 200.
 */
export interface QueueMatching {
  filter: RequestFilter;
  total: number;
  asOf: string;
  isFiltered: boolean;
  notVendorCertified?: number;
}

interface DecideOptions {
  tenant: Tenant;
  pool: Pool;
  sitePools: Pool[];
  /** Set while every match is selected: the decision takes them all on the server. */
  allMatching: QueueMatching | null;
  /** The requests a decision of the selection takes. */
  targets: string[];
  onDecided: (records: JoinRequestRecord[]) => void;
  setNotices: Dispatch<SetStateAction<string[]>>;
  /** After a decision went through: the ids it decided (the targets and what the server named). */
  onDone: (decidedIds: ReadonlySet<string>) => void;
}

type Client = ReturnType<typeof useTRPCClient>;
type Ref = { tenantId: string; poolId: string };

const poolName = (pools: Pool[], id: string) => pools.find((p) => p.id === id)?.name ?? id;
const labelsOf = (decision: Decision) => (decision.labels ? { labels: decision.labels } : {});

/** Approves or rejects the targets (or every match), in words for the toolbar, with progress for every match. */
export function useDecide(options: DecideOptions) {
  const client = useTRPCClient();
  const [isPending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
  const { tenant, pool, sitePools, allMatching, targets, onDecided, setNotices, onDone } = options;

  async function decide(decision: Decision) {
    setPending(true);
    setError(null);
    const ref = { tenantId: tenant.id, poolId: decision.action === 'approve' ? decision.poolId : pool.id };
    const decided: JoinRequestRecord[] = [];
    const said: string[] = [];
    const explain = async (requestId: string) => {
      const record = await client.joinRequests.get.query({ tenantId: tenant.id, poolId: pool.id, requestId }).catch(() => null);
      if (record) {
        decided.push(record);
        said.push(decidedElsewhere(record, decision.action));
      } else said.push(`Request ${requestId} is no longer there.`);
    };
    try {
      if (allMatching) {
        const { done } = await decideAllMatching(client, decision, ref, allMatching, decided, setProgress);
        said.push(...allMatchingWords(decision, done, allMatching.total, decided, poolName(sitePools, decision.poolId)));
      } else {
        const skipped = await decideSelection(client, decision, ref, targets, decided, said, poolName(sitePools, decision.poolId));
        for (const id of skipped) await explain(id);
      }
      onDecided(decided);
      setNotices((before) => [...said, ...before.filter((text) => !said.includes(text))]);
      onDone(new Set([...targets, ...decided.map((record) => record.id)]));
    } catch (failure) {
      if (decided.length) onDecided(decided);
      setError(toApiError(failure).message);
    } finally {
      setPending(false);
      setProgress(null);
    }
  }

  return { decide, isPending, error, setError, progress };
}

/** One call for the whole selection; says what it did and hands back the ids the server skipped. */
async function decideSelection(
  client: Client,
  decision: Decision,
  ref: Ref,
  requestIds: string[],
  decided: JoinRequestRecord[],
  said: string[],
  pool: string,
): Promise<string[]> {
  if (decision.action === 'reject') {
    const answer = await client.joinRequests.rejectMany.mutate({ ...ref, requestIds, reason: decision.reason });
    decided.push(...answer.rejected);
    if (answer.rejected.length)
      said.unshift(`Rejected ${answer.rejected.length === 1 ? 'the request' : `${answer.rejected.length} requests`}.`);
    return answer.skipped;
  }
  const { ttlSeconds } = decision;
  const answer = await client.joinRequests.approveMany.mutate({
    ...ref,
    requestIds,
    ttlSeconds,
    reason: decision.reason || undefined,
    ...labelsOf(decision),
  });
  decided.push(...answer.approved, ...answer.recorded);
  const [first] = answer.recorded;
  const n = answer.recorded.length;
  if (first)
    said.unshift(
      `Recorded your approval of ${n === 1 ? `request ${first.id}` : `${n} requests`} (${first.approvals} of ${first.requiredApprovals}): not yet effective. Another person must approve ${n === 1 ? 'it' : 'them'} into the same pool.`,
    );
  if (answer.approved.length)
    said.unshift(
      `Approved ${answer.approved.length === 1 ? `request ${answer.approved[0]!.id}` : `${answer.approved.length} requests`} into pool ${pool}.`,
    );
  return answer.skipped;
}

/**
 * Decides every pending request that matched when the count was read (`createdUpTo`), a page of 200 per
 * call on the server, showing progress; it stops when nothing that matched is left.
 */
async function decideAllMatching(
  client: Client,
  decision: Decision,
  ref: Ref,
  matching: QueueMatching,
  decided: JoinRequestRecord[],
  setProgress: (progress: { done: number; total: number }) => void,
): Promise<{ done: number }> {
  const { filter, total, asOf } = matching;
  const by = { ...filter, createdUpTo: asOf };
  let done = 0;
  setProgress({ done, total });
  for (;;) {
    const [page, remaining] =
      decision.action === 'approve'
        ? await client.joinRequests.approveMany
            .mutate({ ...ref, matching: by, ttlSeconds: decision.ttlSeconds, reason: decision.reason || undefined, ...labelsOf(decision) })
            .then((a) => [[...a.approved, ...a.recorded], a.remaining] as const)
        : await client.joinRequests.rejectMany
            .mutate({ ...ref, matching: by, reason: decision.reason })
            .then((a) => [a.rejected, a.remaining] as const);
    decided.push(...page);
    done += page.length;
    setProgress({ done: Math.min(done, total), total });
    if (!page.length || remaining === 0) return { done };
  }
}

/** What deciding every match did, in words. */
function allMatchingWords(decision: Decision, done: number, total: number, decided: JoinRequestRecord[], pool: string): string[] {
  const isApprove = decision.action === 'approve';
  const said = [`${isApprove ? 'Approved' : 'Rejected'} ${done} of ${total} matching requests${isApprove ? ` into pool ${pool}` : ''}.`];
  const recorded = decided.filter((r) => r.state === 'pending').length;
  if (recorded)
    said.push(
      `Recorded your approval of ${recorded} of them (1 of 2): not yet effective. Another person must approve them into the same pool.`,
    );
  if (done < total)
    said.push(
      `${total - done} were decided elsewhere, expired, or would be refused on retry (their token or the pool's policy), or you approved them first already, and were left as they are.`,
    );
  return said;
}
