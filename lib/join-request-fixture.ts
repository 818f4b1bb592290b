import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';

type Named = Pick<JoinRequestRecord, 'id' | 'siteId' | 'createdAt' | 'expiresAt'>;

/**
 * A join request record for tests of the console's queue: pending, by discovery, nothing claimed, vouched or
 * decided; `fields` names the rest.
 */
export function joinRequestRecord(fields: Named & Partial<JoinRequestRecord>): JoinRequestRecord {
  return {
    state: 'pending',
    attestor: 'discovery',
    claims: {},
    hardwareKey: null,
    hardwareKeyTrusted: false,
    mac: null,
    ip: null,
    workflowId: null,
    vouchedBy: null,
    bootLeaseEpoch: null,
    csrSha256: 'ab',
    decidedAt: null,
    decidedBy: null,
    decidedByName: null,
    reason: null,
    poolId: null,
    consumedAt: null,
    nodeId: null,
    clientAddress: null,
    requiredApprovals: 1,
    firstApproval: null,
    approvals: 0,
    tpm: null,
    ekCertified: null,
    ...fields,
  };
}
