import Link from 'next/link';
import { HardwareKeyBadge } from '@/components/join-requests/request-badges';
import { LocalTime } from '@/components/ui/time';
import { withTenant } from '@/lib/tenant-url';
import type { NodeDetail } from '@/protocol/api/node-schemas';

type Admission = NonNullable<NodeDetail['admission']>;

/** Who decided, in words: an operator's name (else their actor id), `rule <name>`, `import <id>`. */
const deciderOf = (a: Admission) => a.decidedByName ?? a.decidedBy ?? 'unknown';

const HOW: Record<NonNullable<Admission['decidedVia']>, string> = {
  operator: 'by hand',
  rule: 'by an approval rule',
  import: 'by an expected-machine import',
};

/**
 * How the node got in: the join request that admitted it and its decision (who, when, why, by rule or by hand,
 * both approvals on a two-person site), or the token it joined with when no request was needed.
 */
export function NodeAdmission({ node, tenantId }: { node: NodeDetail; tenantId: string }) {
  const a = node.admission;
  if (!a)
    return (
      <p className="panel-body" data-testid="node-admission">
        Joined through <strong>{node.attestor}</strong>
        {node.joinTokenId ? (
          <>
            {' '}
            with token <code>{node.joinTokenId}</code>
          </>
        ) : null}
        , admitted without a join request.
      </p>
    );
  return (
    <dl className="details panel-body" data-testid="node-admission">
      <dt>Join request</dt>
      <dd>
        <Link href={withTenant(`/join-requests?pool=${node.poolId ?? ''}&state=all&request=${a.requestId}`, tenantId)}>
          <code>{a.requestId}</code>
        </Link>{' '}
        ({a.attestor}), asked <LocalTime iso={a.askedAt} />
      </dd>
      <dt>Decided</dt>
      <dd>
        {a.decidedVia ? HOW[a.decidedVia] : 'not recorded'}
        {a.decidedBy && (
          <>
            {' '}
            by <strong>{deciderOf(a)}</strong>
          </>
        )}
        {a.decidedAt && (
          <>
            {', '}
            <LocalTime iso={a.decidedAt} />
          </>
        )}
      </dd>
      {a.requiredApprovals === 2 && (
        <>
          <dt>Approvals</dt>
          <dd>
            {a.firstApproval ? (
              <ul className="plain-list">
                <li>
                  1st: <strong>{a.firstApproval.byName ?? a.firstApproval.by}</strong>, <LocalTime iso={a.firstApproval.at} />
                </li>
                <li>
                  2nd: <strong>{deciderOf(a)}</strong>
                  {a.decidedAt && (
                    <>
                      , <LocalTime iso={a.decidedAt} />
                    </>
                  )}
                </li>
              </ul>
            ) : (
              'two-person site; the first approval is not recorded'
            )}
          </dd>
        </>
      )}
      <dt>{a.decidedVia === 'rule' ? 'Rule' : 'Reason'}</dt>
      <dd>{a.reason ? a.reason : <span className="muted">none given</span>}</dd>
      <dt>Key trust (request)</dt>
      <dd>
        <HardwareKeyBadge hasKey={a.hardwareKeyTrusted || node.hasHardwareKey} isTrusted={a.hardwareKeyTrusted} />
      </dd>
      {a.consumedAt && (
        <>
          <dt>Used by the join</dt>
          <dd>
            <LocalTime iso={a.consumedAt} />
          </dd>
        </>
      )}
    </dl>
  );
}
