import Link from 'next/link';
import type { Pool, Site } from '@/lib/api-types';
import type { PoolCounts } from '@/server/pools/counts';
import { withTenant } from '@/lib/tenant-url';
import { formatTimestamp } from '@/components/ui/format';
import { InstallScriptButton } from './install-script-button';
import { ArchivePoolButton } from './archive-pool-button';
import { SiteApprovalsButton } from './site-approvals-button';
import { StaleNodesButton } from './stale-nodes-button';
import { TableScroll } from '@/components/ui/table-scroll';

/** One site and its pools, as a table. */
interface SitePoolsProps {
  site: Site;
  pools: Pool[];
  tenantId: string;
  /** Live counts by pool id; a pool missing here has no node and no live token. */
  counts: Map<string, PoolCounts>;
  /** Whether the operator's role may archive pools; the archive control is left out otherwise. */
  canManage: boolean;
  /** Whether the operator's role may change the site's settings (admins). */
  canManageSite?: boolean;
}

export function SitePools({ site, pools, tenantId, counts, canManage, canManageSite = canManage }: SitePoolsProps) {
  const headingId = `site-${site.id}`;
  return (
    <section className="panel" aria-labelledby={headingId}>
      <header className="panel-header">
        <h2 id={headingId}>
          <span className="panel-eyebrow">Site </span>
          {site.name}
        </h2>
        <span className="badge">{site.kind}</span>
        {site.archivedAt && <span className="badge badge-muted">archived</span>}
        {site.requiredApprovals === 2 && <span className="badge">two-person approval</span>}
        {/* Off unless the site turns it on (sites update --tpm-enrollment on): then any TPM may wait in its queue. */}
        {site.tpm.enrollment && (
          <span className="badge" title="A TPM that is neither vendor-rooted nor listed may ask to join; it waits in the queue">
            TPM enrollment on
          </span>
        )}
        <code className="id" title="Site id">
          {site.id}
        </code>
        <span className="panel-meta">
          {pools.length} {pools.length === 1 ? 'pool' : 'pools'}
        </span>
        {canManageSite && !site.archivedAt && <SiteApprovalsButton site={site} tenantId={tenantId} />}
      </header>
      {pools.length === 0 ? (
        <p className="panel-empty">No pools in this site.</p>
      ) : (
        <TableScroll label={`Pools of ${site.name}`}>
          <table className="table">
            <caption className="visually-hidden">Pools in site {site.name}</caption>
            <thead>
              <tr>
                <th scope="col">Name / ID</th>
                <th scope="col">Agent</th>
                <th scope="col">Policy</th>
                <th scope="col">Acceptance checks</th>
                <th scope="col">Nodes</th>
                <th scope="col">Live tokens</th>
                <th scope="col">Created (UTC)</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {pools.map((pool) => (
                <PoolRow key={pool.id} pool={pool} tenantId={tenantId} counts={counts.get(pool.id)} canManage={canManage} />
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </section>
  );
}

function PoolRow({
  pool,
  tenantId,
  counts,
  canManage,
}: {
  pool: Pool;
  tenantId: string;
  counts: PoolCounts | undefined;
  canManage: boolean;
}) {
  const attestors = pool.policy.joinAttestors;
  const isPlatformOperated = pool.policy.kubernetes?.platformOperated === true;
  return (
    <tr className={pool.archivedAt ? 'row-archived' : undefined}>
      <th scope="row" className="cell-name">
        <span className="pool-name">{pool.name}</span>
        <code className="id">{pool.id}</code>
      </th>
      <td>
        <span className={`badge ${pool.agent === 'bcd' ? 'badge-info' : 'badge-muted'}`}>{pool.agent}</span>
      </td>
      <td className="cell-wrap">
        <div className="policy">
          {attestors?.length ? <TagList values={attestors} /> : <span className="muted">any attestor</span>}
          {isPlatformOperated && <span className="badge badge-warn">k8s platform-operated</span>}
          {pool.policy.staleNodes && (
            <span className="badge" title="Disconnected nodes are cordoned, then retired (stale-node policy)">
              stale: cordon {pool.policy.staleNodes.cordonAfterDays}d · retire +{pool.policy.staleNodes.retireAfterDays}d
            </span>
          )}
        </div>
      </td>
      <td className="cell-wrap">
        {pool.acceptanceChecks.length ? <TagList values={pool.acceptanceChecks} /> : <span className="muted">none</span>}
      </td>
      <td className="cell-wrap">
        {/* The visible count starts the link's name, so speech input ("click 2 ready") finds it. */}
        <Link href={withTenant(`/nodes?pool=${pool.id}`, tenantId)}>
          <NodeCounts byState={counts?.nodesByState ?? {}} />
          <span className="visually-hidden"> (nodes of pool {pool.name})</span>
        </Link>
        <Link className="cell-sub" href={withTenant(`/nodes?pool=${pool.id}&connected=true`, tenantId)}>
          {counts?.connectedNodes ?? 0} connected
          <span className="visually-hidden"> (connected nodes of pool {pool.name})</span>
        </Link>
      </td>
      <td className="cell-number">
        {pool.agent === 'bcd' ? (
          <>
            <Link href={withTenant(`/join-tokens?pool=${pool.id}`, tenantId)}>
              {counts?.liveTokens ?? 0} live
              <span className="visually-hidden"> (join tokens of pool {pool.name})</span>
            </Link>
            <Link className="cell-sub" href={withTenant(`/join-requests?pool=${pool.id}`, tenantId)}>
              {counts?.pendingRequests ?? 0} pending
              <span className="visually-hidden"> (join requests of pool {pool.name})</span>
            </Link>
          </>
        ) : (
          <span className="muted">no daemon</span>
        )}
      </td>
      <td className="cell-time">
        <time dateTime={pool.createdAt} title={pool.createdAt}>
          {formatTimestamp(pool.createdAt, { zone: false })}
        </time>
      </td>
      <td>
        {pool.archivedAt ? (
          <span className="status status-archived" title={`Archived ${formatTimestamp(pool.archivedAt)}`}>
            Archived
          </span>
        ) : (
          <span className="status status-active">Active</span>
        )}
      </td>
      <td className="cell-actions">
        {pool.agent === 'bcd' && !pool.archivedAt && <InstallScriptButton pool={pool} tenantId={tenantId} />}
        <StaleNodesButton pool={pool} tenantId={tenantId} canManage={canManage} />
        {canManage && !pool.archivedAt && <ArchivePoolButton pool={pool} tenantId={tenantId} />}
      </td>
    </tr>
  );
}

/** `2 ready · 1 adopting`, or `none`. */
function NodeCounts({ byState }: { byState: Record<string, number> }) {
  const entries = Object.entries(byState).sort(([a], [b]) => a.localeCompare(b));
  if (!entries.length) return <>no nodes</>;
  return <>{entries.map(([state, n]) => `${n} ${state}`).join(' · ')}</>;
}

function TagList({ values }: { values: readonly string[] }) {
  return (
    <ul className="tags">
      {values.map((value) => (
        <li key={value} className="tag">
          {value}
        </li>
      ))}
    </ul>
  );
}
