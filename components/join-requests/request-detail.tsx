'use client';

import Link from 'next/link';
import { LocalTime, ShortHash } from '@/components/ui/time';
import { claimEntries } from '@/lib/join-request-queue';
import { EkNotCertifiedBadge, HardwareKeyBadge } from './request-badges';
import { formatAge, formatRelative } from '@/lib/join-token-form';
import { withTenant } from '@/lib/tenant-url';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';

/** Everything a request holds: the attestor's view, the full claims, the CSR hash and the decision. */
export function RequestDetail({ request, now, tenantId }: { request: JoinRequestRecord; now: number | null; tenantId: string }) {
  const claims = claimEntries(request.claims);
  const known = new Set([
    'hostname',
    'productUuid',
    'productSerial',
    'boardSerial',
    'chassisSerial',
    'macs',
    'gpuUuids',
    'sysVendor',
    'productName',
  ]);
  const other = Object.entries(request.claims).filter(([key]) => !known.has(key));
  return (
    <section className="panel request-detail" aria-labelledby={`detail-${request.id}`}>
      <header className="panel-header">
        <h2 id={`detail-${request.id}`}>
          <span className="panel-eyebrow">Request </span>
          <code>{request.id}</code>
        </h2>
        <span className={`status status-${request.state} detail-state`} data-testid="detail-state">
          {request.state}
        </span>
      </header>
      <dl className="details">
        <dt>Attestor</dt>
        <dd>{request.attestor}</dd>
        <dt>Vouched by (boot step)</dt>
        <dd>{request.vouchedBy ?? <span className="muted">nobody</span>}</dd>
        <dt>IP</dt>
        <dd>{request.ip ?? <span className="muted">unknown</span>}</dd>
        <dt>Caller address</dt>
        <dd>
          {request.clientAddress ?? <span className="muted">not recorded</span>}
          <span className="cell-sub">where the join came from; through the gateway, the address the gateway saw</span>
        </dd>
        <dt>Boot MAC (vouched)</dt>
        <dd>{request.mac ?? <span className="muted">none</span>}</dd>
        <dt>Hardware key</dt>
        <dd>
          {request.hardwareKey ? (
            <>
              <ShortHash value={request.hardwareKey} label="hardware key" />{' '}
              <HardwareKeyBadge hasKey isTrusted={request.hardwareKeyTrusted} />
            </>
          ) : (
            <HardwareKeyBadge hasKey={false} isTrusted={false} />
          )}
        </dd>
        {request.tpm && (
          <>
            {/* The TPM proved these by activating the credential: the EK and AK are vouched for, unlike the claims. */}
            <dt>TPM endorsement key</dt>
            <dd>
              <ShortHash value={request.tpm.ekHash} label="EK hash" />
              <span className="cell-sub">
                {request.tpm.ekIssuer === 'no EK certificate' ? 'no EK certificate' : `EK certificate issued by ${request.tpm.ekIssuer}`}
              </span>
              {request.tpm.ekChainProblem && <span className="cell-sub">not vendor-rooted: {request.tpm.ekChainProblem}</span>}
              {request.ekCertified === false && (
                <span className="cell-sub">
                  <EkNotCertifiedBadge />
                </span>
              )}
            </dd>
            <dt>TPM attestation key</dt>
            <dd>
              <code>{request.tpm.akStatement}</code>
            </dd>
          </>
        )}
        <dt>CSR SHA-256</dt>
        <dd>
          <ShortHash value={request.csrSha256} label="CSR hash" />
        </dd>
        {request.workflowId && (
          <>
            <dt>Workflow</dt>
            <dd>
              <code>{request.workflowId}</code>
              {request.bootLeaseEpoch !== null && <span className="cell-sub">boot lease epoch {request.bootLeaseEpoch}</span>}
            </dd>
          </>
        )}
        <dt>Asked</dt>
        <dd>
          <LocalTime iso={request.createdAt} /> <span className="cell-sub">{now === null ? null : formatAge(request.createdAt, now)}</span>
        </dd>
        <dt>Expires</dt>
        <dd>
          <LocalTime iso={request.expiresAt} />{' '}
          <span className="cell-sub">{now === null ? null : formatRelative(request.expiresAt, now)}</span>
        </dd>
        {request.requiredApprovals === 2 && (
          <>
            <dt>Approvals</dt>
            <dd>
              {request.state === 'pending' || request.state === 'approved' || request.state === 'consumed'
                ? `${request.approvals} of ${request.requiredApprovals}`
                : 'two needed'}
              {request.state === 'pending' && request.approvals > 0 && (
                <span className="cell-sub">recorded, not yet effective: another person must approve it into the same pool</span>
              )}
              {request.firstApproval && (
                <span className="cell-sub">
                  first by {request.firstApproval.byName ?? request.firstApproval.by} at <LocalTime iso={request.firstApproval.at} />
                  {request.firstApproval.poolId && <> into pool {request.firstApproval.poolId}</>}
                </span>
              )}
            </dd>
          </>
        )}
        {request.decidedAt && (
          <>
            <dt>Decided</dt>
            <dd>
              {request.state} by {request.decidedByName ?? request.decidedBy ?? 'unknown'} at <LocalTime iso={request.decidedAt} />
              {request.poolId && <span className="cell-sub">into pool {request.poolId}</span>}
              {request.reason && <span className="cell-sub">reason: {request.reason}</span>}
            </dd>
          </>
        )}
        {request.consumedAt && (
          <>
            <dt>Joined</dt>
            <dd>
              <LocalTime iso={request.consumedAt} />
              {request.nodeId && (
                <span className="cell-sub">
                  as node <Link href={withTenant(`/nodes/${request.nodeId}`, tenantId)}>{request.nodeId}</Link>
                </span>
              )}
            </dd>
          </>
        )}
      </dl>
      {/* Rules and people should weigh these apart: the boot step vouched for the MAC, IP and voucher above.
          Claims are the machine's own words: always rendered as text, never as markup or links. */}
      <h3 className="detail-heading">
        Claims{' '}
        <span className="badge badge-warn" data-testid="claims-unverified">
          reported by the machine, unverified
        </span>
      </h3>
      {claims.length + other.length === 0 ? (
        <p className="muted">The machine reported no claims.</p>
      ) : (
        <dl className="details">
          {claims.map((entry) => (
            <div key={entry.key} className="details-row">
              <dt>{entry.label}</dt>
              <dd>
                <code>{entry.value}</code>
              </dd>
            </div>
          ))}
          {other.map(([key, value]) => (
            <div key={key} className="details-row">
              <dt>{key}</dt>
              <dd>
                <code>{typeof value === 'string' ? value : JSON.stringify(value)}</code>
              </dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  );
}
