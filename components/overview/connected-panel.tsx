import Link from 'next/link';
import type { Overview } from '@/lib/overview-series';

/**
 * Connected nodes per pool: how many of the pool's nodes (not retired) hold a live session, out of how many.
 * The bar is decoration beside the numbers, which are what assistive technology reads.
 */
export function ConnectedPanel({ data, link }: { data: Overview; link: (path: string) => string }) {
  return (
    <section className="panel overview-panel" aria-labelledby="ov-connected">
      <header className="panel-header overview-panel-header">
        <h2 id="ov-connected">Connected nodes</h2>
      </header>
      {data.connected.length === 0 ? (
        <p className="overview-body muted">No pool of this tenant has nodes.</p>
      ) : (
        <div className="table-scroll">
          <table className="table overview-table">
            <thead>
              <tr>
                <th scope="col">Pool</th>
                <th scope="col" className="num">
                  Connected
                </th>
                <th scope="col" className="num">
                  Of
                </th>
              </tr>
            </thead>
            <tbody>
              {data.connected.map((c) => (
                <tr key={c.poolId}>
                  <th scope="row">
                    <Link href={link(`/nodes?pool=${c.poolId}&connected=true`)}>{c.poolName}</Link>
                  </th>
                  <td className="num">
                    <span
                      className="overview-bar"
                      aria-hidden="true"
                      style={{ width: `${c.total ? Math.round((c.connected / c.total) * 100) : 0}%` }}
                    />
                    {c.connected}
                  </td>
                  <td className="num">
                    <Link href={link(`/nodes?pool=${c.poolId}`)} aria-label={`All ${c.total} nodes of ${c.poolName}`}>
                      {c.total}
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
