'use client';

import Link from 'next/link';
import { HardwareKeyBadge } from '@/components/join-requests/request-badges';
import { nameColumn } from '@/components/ui/data-columns';
import { DataTable, type DataColumn } from '@/components/ui/data-table';
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
  /** The ticked rows of the loaded pages (every one when all matching are selected). */
  selected: ReadonlySet<string>;
  /** A box or the header's box was pressed: the loaded rows ticked now. */
  onSelect: (ids: Set<string>) => void;
}

const hostnameOf = (node: NodeListItem) => (typeof node.claims.hostname === 'string' ? node.claims.hostname : null);

/** The nodes of the loaded pages in id order, each with a box to select it. */
export function NodeTable({ nodes, tenantId, now, poolNames, selected, onSelect }: NodeTableProps) {
  return (
    <DataTable
      label="Nodes"
      rows={nodes}
      columns={nodeColumns(tenantId, now, poolNames)}
      rowKey={(node) => node.id}
      rowClassName={(node) => (node.state === 'retired' ? 'row-archived' : undefined)}
      rowProps={(node) => ({ id: `node-row-${node.id}` })}
      selection={{
        selected,
        onChange: onSelect,
        allLabel: 'Select every loaded node',
        rowLabel: (node) => `Select ${hostnameOf(node) ?? node.id}`,
      }}
    />
  );
}

function nodeColumns(tenantId: string, now: number, poolNames: Map<string, string>): DataColumn<NodeListItem>[] {
  return [
    nameColumn('Node', (node) => (
      <Link href={withTenant(`/nodes/${node.id}`, tenantId)}>
        <code>{node.id}</code>
      </Link>
    )),
    {
      id: 'state',
      header: 'State',
      cell: (node) => (
        <>
          <span className={`status status-${node.state}`}>{node.state}</span>
          {node.cordoned && <span className="badge badge-warn">cordoned</span>}
        </>
      ),
    },
    { id: 'session', header: 'Session', className: 'cell-time', cell: (node) => <SessionCell session={node.session} now={now} /> },
    {
      id: 'pool',
      header: 'Pool',
      cell: (node) => (node.poolId ? (poolNames.get(node.poolId) ?? node.poolId) : <span className="muted">no pool</span>),
    },
    {
      id: 'machine',
      header: 'Machine',
      className: 'cell-machine-summary',
      title: (node) => machineSummary(node.claims) || undefined,
      cell: (node) => (
        <>
          {machineSummary(node.claims) || <span className="muted">no claims</span>}
          {node.joinRequestId && (
            <span className="cell-sub">
              admitted by{' '}
              <Link href={withTenant(`/join-requests?pool=${node.poolId ?? ''}&state=all&request=${node.joinRequestId}`, tenantId)}>
                {node.joinRequestId}
              </Link>
            </span>
          )}
        </>
      ),
    },
    {
      id: 'labels',
      header: 'Labels',
      cell: (node) =>
        Object.entries(node.labels).map(([key, value]) => (
          <span key={key} className="badge">
            {key}={value}
          </span>
        )),
    },
    {
      id: 'trust',
      header: 'Trust',
      cell: (node) => (
        <>
          {node.trust}
          <span className="cell-sub">
            <HardwareKeyBadge hasKey={node.hasHardwareKey} isTrusted={node.hardwareKeyTrusted} isRamdisk={node.attestor === 'discovery'} />
          </span>
        </>
      ),
    },
    {
      id: 'certificate',
      header: 'Certificate',
      className: 'cell-time',
      cell: (node) =>
        node.certificate ? (
          <span title={node.certificate.notAfter}>expires {formatRelative(node.certificate.notAfter, now)}</span>
        ) : (
          <span className="muted">no live certificate</span>
        ),
    },
    {
      id: 'joined',
      header: 'Joined',
      className: 'cell-time',
      cell: (node) => (
        <>
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
        </>
      ),
    },
  ];
}
