'use client';

import Link from 'next/link';
import { HardwareKeyBadge } from '@/components/join-requests/request-row';
import { TableScroll } from '@/components/ui/table-scroll';
import { LocalTime } from '@/components/ui/time';
import { machineSummary } from '@/lib/join-request-queue';
import { formatRelative } from '@/lib/join-token-form';
import { withTenant } from '@/lib/tenant-url';
import type { NodeListItem } from '@/protocol/api/node-schemas';
import { SessionCell } from './session-state';

interface NodeTableProps {
  nodes: NodeListItem[];
  tenantId: string;
  now: number;
  poolNames: Map<string, string>;
  /** Ticked rows (every row when all matching are selected). */
  isSelected: (nodeId: string) => boolean;
  onToggle: (nodeId: string) => void;
  /** Ticks or clears every loaded row. */
  onToggleAll: () => void;
  allSelected: boolean;
}

const hostnameOf = (node: NodeListItem) => (typeof node.claims.hostname === 'string' ? node.claims.hostname : null);

/** The nodes of the loaded pages in id order, each with a box to select it. */
export function NodeTable({ nodes, tenantId, now, poolNames, isSelected, onToggle, onToggleAll, allSelected }: NodeTableProps) {
  return (
    <TableScroll label="Nodes">
      <table className="table">
        <thead>
          <tr>
            <th scope="col" className="cell-select">
              <input type="checkbox" aria-label="Select every loaded node" checked={allSelected} onChange={onToggleAll} />
            </th>
            <th scope="col">Node</th>
            <th scope="col">State</th>
            <th scope="col">Session</th>
            <th scope="col">Pool</th>
            <th scope="col">Machine</th>
            <th scope="col">Labels</th>
            <th scope="col">Trust</th>
            <th scope="col">Certificate</th>
            <th scope="col">Joined</th>
          </tr>
        </thead>
        <tbody>
          {nodes.map((node) => {
            return (
              <tr key={node.id} id={`node-row-${node.id}`} className={node.state === 'retired' ? 'row-archived' : undefined}>
                <td className="cell-select">
                  <input
                    type="checkbox"
                    aria-label={`Select ${hostnameOf(node) ?? node.id}`}
                    checked={isSelected(node.id)}
                    onChange={() => onToggle(node.id)}
                  />
                </td>
                <th scope="row" className="cell-name">
                  <Link href={withTenant(`/nodes/${node.id}`, tenantId)}>
                    <code>{node.id}</code>
                  </Link>
                </th>
                <td>
                  <span className={`status status-${node.state}`}>{node.state}</span>
                  {node.cordoned && <span className="badge badge-warn">cordoned</span>}
                </td>
                <td className="cell-time">
                  <SessionCell session={node.session} now={now} />
                </td>
                <td>{node.poolId ? (poolNames.get(node.poolId) ?? node.poolId) : <span className="muted">no pool</span>}</td>
                <td className="cell-machine-summary" title={machineSummary(node.claims) || undefined}>
                  {machineSummary(node.claims) || <span className="muted">no claims</span>}
                  {node.joinRequestId && (
                    <span className="cell-sub">
                      admitted by{' '}
                      <Link href={withTenant(`/join-requests?pool=${node.poolId ?? ''}&state=all&request=${node.joinRequestId}`, tenantId)}>
                        {node.joinRequestId}
                      </Link>
                    </span>
                  )}
                </td>
                <td>
                  {Object.entries(node.labels).map(([key, value]) => (
                    <span key={key} className="badge">
                      {key}={value}
                    </span>
                  ))}
                </td>
                <td>
                  {node.trust}
                  <span className="cell-sub">
                    <HardwareKeyBadge
                      hasKey={node.hasHardwareKey}
                      isTrusted={node.hardwareKeyTrusted}
                      isRamdisk={node.attestor === 'discovery'}
                    />
                  </span>
                </td>
                <td className="cell-time">
                  {node.certificate ? (
                    <span title={node.certificate.notAfter}>expires {formatRelative(node.certificate.notAfter, now)}</span>
                  ) : (
                    <span className="muted">no live certificate</span>
                  )}
                </td>
                <td className="cell-time">
                  <LocalTime iso={node.createdAt} />
                  <span className="cell-sub">
                    {node.attestor}
                    {node.joinTokenId && (
                      <>
                        {' '}
                        <code>{node.joinTokenId}</code>
                      </>
                    )}
                  </span>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableScroll>
  );
}
