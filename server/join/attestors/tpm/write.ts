import type pg from 'pg';
import { JOIN_REQUESTS_CHANNEL } from '../../../requests/request-store-sql';
import { consumeChallenges } from '../../challenges';
import type { PreparedJoin } from '../../prepare';
import type { TpmState } from './load';

// What a tpm batch writes: its spent nonces, its enrollment requests (the queue's rows with the tpm fields), the
// EK bindings of admitted nodes and the approvals they consumed.

const WRITE_TPM_REQUESTS_SQL = `
WITH recorded AS (
  INSERT INTO join_requests (id, tenant_id, site_id, pool_id, attestor, state, machine_key, claims, csr_sha256, tpm, ek_certified, expires_at, created_at,
                             client_address)
  SELECT id, tenant, site, pool, 'tpm', 'pending', mk, claims, csr, tpm, ekc, compute_now() + ttl * interval '1 second',
         date_trunc('milliseconds', compute_now()), caddr
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $8::jsonb[], $9::int[], $10::bool[], $11::text[])
      AS x(id, tenant, site, pool, mk, claims, csr, tpm, ttl, ekc, caddr)
  ON CONFLICT (id) DO UPDATE SET csr_sha256 = EXCLUDED.csr_sha256, tpm = EXCLUDED.tpm, ek_certified = EXCLUDED.ek_certified, claims = EXCLUDED.claims,
         expires_at = EXCLUDED.expires_at, client_address = EXCLUDED.client_address
   WHERE join_requests.state = 'pending'
  RETURNING id, tenant_id, site_id
)
SELECT pg_notify('${JOIN_REQUESTS_CHANNEL}', json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
  FROM recorded GROUP BY tenant_id, site_id`;

export async function writeTpm(client: pg.PoolClient, state: TpmState, admitted: ReadonlyMap<PreparedJoin, string>): Promise<boolean> {
  let wrote = false;
  if (state.used.length) {
    await consumeChallenges(client, state.used);
    wrote = true;
  }
  if (state.deferred.length) {
    const d = state.deferred;
    await client.query(WRITE_TPM_REQUESTS_SQL, [
      d.map((r) => r.id),
      d.map((r) => r.tenantId),
      d.map((r) => r.siteId),
      d.map((r) => r.poolId),
      d.map((r) => r.machineKey),
      d.map((r) => JSON.stringify(r.claims)),
      d.map((r) => r.csrSha256),
      d.map((r) => JSON.stringify(r.tpm)),
      d.map((r) => r.ttl),
      d.map((r) => r.ekCertified),
      d.map((r) => r.clientAddress),
    ]);
    wrote = true;
  }
  const bindings = [...state.admitted].flatMap(([join, facts]) => (admitted.has(join) ? [{ nodeId: admitted.get(join)!, ...facts }] : []));
  if (bindings.length) {
    // The EK now names this node (a reclaim keeps it); an approval the join used is consumed, naming the node.
    // Written before the node row of a new machine (the core inserts it after this write): the foreign key is deferred.
    await client.query(
      `INSERT INTO tpm_ek_bindings (ek_sha256, node_id) SELECT ek, id FROM unnest($1::text[], $2::text[]) AS b(id, ek)
       ON CONFLICT (ek_sha256) DO UPDATE SET node_id = EXCLUDED.node_id`,
      [bindings.map((b) => b.nodeId), bindings.map((b) => b.ekHash)],
    );
    const consumed = bindings.filter((b) => b.consumesRequestId);
    if (consumed.length) {
      await client.query(
        `WITH done AS (
           UPDATE join_requests j SET state = 'consumed', consumed_at = compute_now(), node_id = c.node
             FROM unnest($1::text[], $2::text[]) AS c(id, node) WHERE j.id = c.id RETURNING j.id, j.tenant_id, j.site_id)
         SELECT pg_notify('${JOIN_REQUESTS_CHANNEL}', json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
           FROM done GROUP BY tenant_id, site_id`,
        [consumed.map((b) => b.consumesRequestId), consumed.map((b) => b.nodeId)],
      );
    }
    wrote = true;
  }
  return wrote;
}
