import type { IssuedNodeCertificate } from '../pki/issuance/node-certificate';
import type { JoinExpect } from '../../protocol/api/join-expect';
import type { DiscoveryBootInfo } from './boot-info';
import type { Admission } from './decide';
import type { PreparedJoin } from './prepare';
import { mergeLabels } from '../../protocol/api/labels';

// The admission transaction's SQL, kept here as raw SQL on a plain pg connection rather than Prisma: it is
// the join's hot path, where every round trip and every plan shows in joins per second. Each statement runs
// as a named prepared statement (parsed and, after a few runs, planned once per connection), and the
// transaction is four round trips: BEGIN, READ_ADMISSION_SQL, WRITE_ADMISSIONS_SQL, COMMIT, the second of
// each pair sent without waiting for the first (node-postgres queues it on the connection).

/**
 * Opens the admission transaction. Its statements run on generic plans: with custom plans PostgreSQL planned
 * the eight-CTE write every time, and the A/B (bench/join.ts --compare) measured about 0.1 ms less PostgreSQL
 * CPU per join, a third of a transaction's fixed cost, with generic ones. Every lookup the plans make is by
 * primary key or a unique index, which a generic plan uses as well as a custom one. SET LOCAL: it ends with
 * the transaction, so the pool's other users keep the default.
 */
export const BEGIN_ADMISSION_SQL = 'BEGIN; SET LOCAL plan_cache_mode = force_generic_plan';

/**
 * Every row a batch decides on, read and locked in one statement: the database's now, the batch's tokens
 * (locked in id order, so concurrent batches cannot deadlock), the nodes its trusted hardware keys name and
 * the nodes its `provisioned` tokens name (`by_key` tells them apart; locked in key then id order, always
 * after the tokens: the `count(*)` reads the tokens CTE first), and which CSR
 * keys were certified before (every certificate certifies a key made for it: a key seen again is a
 * replayed request). One row; tokens and nodes as JSON, bytea as hex.
 *
 * The token rows are re-read at their latest version once their lock is granted (uses, revocation), but
 * nodes and certified keys are read at the statement's snapshot, taken before any wait for the token lock:
 * a node or certificate that the transaction this one waited for committed is not seen here. The unique
 * indexes on the trusted hardware key and on the certified key then fail this batch's write, and the joins
 * are retried one by one in fresh transactions (the machine's join answers CONFLICT, a replay is refused).
 * Within one process that cannot arise: AdmissionPipeline never runs two batches holding one machine or
 * CSR key at once.
 */
export const READ_ADMISSION_SQL = `
WITH tokens AS (
  SELECT t.id, t.tenant_id, t.pool_id, t.site_id, t.role, encode(t.secret_hash, 'hex') AS secret_hash, t.uses_left, t.expect,
         t.allow_reclaim, t.hosted, t.bound_mac, t.discovery, t.labels, t.node_id,
         t.revoked_at IS NOT NULL AS is_revoked, t.expires_at <= compute_now() AS is_expired,
         p.id AS p_id, p.agent, p.owner_tenant_id AS p_owner, p.site_id AS p_site, p.archived_at IS NOT NULL AS p_archived,
         p.policy, cardinality(p.acceptance_checks) > 0 AS p_checks,
         s.kind AS s_kind, s.owner_tenant_id AS s_owner, s.discovery AS s_discovery
    FROM join_tokens t
    JOIN sites s ON s.id = t.site_id
    LEFT JOIN pools p ON p.id = t.pool_id
   WHERE t.id = ANY($1::text[])
   ORDER BY t.id
     FOR UPDATE OF t
), known AS (
  SELECT id, tenant_id, site_id, pool_id, role, state, identity_generation, encode(hardware_key, 'hex') AS hardware_key, labels,
         hardware_key_trusted AND hardware_key = ANY($2::bytea[]) AS by_key
    FROM nodes
   WHERE (hardware_key_trusted AND hardware_key = ANY($2::bytea[])
          OR id = ANY(ARRAY(SELECT node_id FROM tokens WHERE node_id IS NOT NULL)))
     AND (SELECT count(*) FROM tokens) >= 0
   ORDER BY nodes.hardware_key, nodes.id
     FOR UPDATE
)
SELECT compute_now() AS now,
       (SELECT coalesce(json_agg(tokens), '[]') FROM tokens) AS tokens,
       (SELECT coalesce(json_agg(known), '[]') FROM known) AS nodes,
       ARRAY(SELECT encode(spki_sha256, 'hex') FROM node_certs WHERE spki_sha256 = ANY($3::bytea[])) AS certified`;

/** One row of `tokens` in {@link READ_ADMISSION_SQL} (json_agg: JSON values, snake_case columns). */
export interface LockedTokenJson {
  id: string;
  tenant_id: string;
  pool_id: string | null;
  site_id: string;
  role: string;
  secret_hash: string;
  uses_left: number;
  expect: JoinExpect | null;
  allow_reclaim: boolean;
  hosted: string | null;
  bound_mac: string | null;
  discovery: DiscoveryBootInfo | null;
  labels: Record<string, string>;
  node_id: string | null;
  is_revoked: boolean;
  is_expired: boolean;
  p_id: string | null;
  agent: string;
  p_owner: string;
  p_site: string;
  p_archived: boolean;
  policy: { joinAttestors?: string[]; kubernetes?: { platformOperated?: boolean } } | null;
  p_checks: boolean;
  s_kind: string;
  s_owner: string;
  s_discovery: unknown;
}

/** One row of `nodes` in {@link READ_ADMISSION_SQL}. */
interface KnownNodeJson {
  id: string;
  tenant_id: string;
  site_id: string;
  pool_id: string | null;
  role: string;
  state: string;
  identity_generation: number;
  hardware_key: string | null;
  labels: Record<string, string>;
  /** Found by a trusted hardware key of the batch (else only as a `provisioned` token's node). */
  by_key: boolean;
}

/** The one row {@link READ_ADMISSION_SQL} answers. */
export interface AdmissionReadRow {
  now: Date;
  tokens: LockedTokenJson[];
  nodes: KnownNodeJson[];
  certified: string[];
}

export interface AdmissionRow {
  join: PreparedJoin;
  decision: Admission;
  nodeId: string;
  identityGeneration: number;
  cert: IssuedNodeCertificate;
  /** The pin of the node CA that issued `cert` (`node_certs.ca_pin`). */
  caPin: string;
  /** The token the admission spends one use of; null for an attestor without a token. */
  tokenId: string | null;
}

/**
 * Every write of a batch of admissions as one statement (data-modifying CTEs): consume token uses, insert
 * new nodes, bump reclaimed nodes (a provisioned one also takes the token's pool and the machine's trusted key) and revoke their older certificates, insert the new certificates, the
 * authorization projection, the events (with one `security.certificate-revoked` per revoked certificate)
 * and the audit rows. Foreign keys are checked at the end of the statement, so a certificate may name a
 * node inserted beside it.
 */
export const WRITE_ADMISSIONS_SQL = `
WITH consume AS (
  UPDATE join_tokens t SET uses_left = t.uses_left - d.n, last_used_at = compute_now()
    FROM unnest($1::text[], $2::int[]) AS d(id, n)
   WHERE t.id = d.id
  RETURNING t.id
), new_nodes AS (
  INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, hardware_key, hardware_key_trusted, identity_generation, claims, attestor, labels)
  SELECT id, tenant, site, pool, role, state, trust, hk, hkt, 1, claims, attestor, labels
    FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bytea[], $11::bool[], $12::jsonb[], $35::text[], $37::jsonb[])
      AS x(id, tenant, site, pool, role, state, trust, hk, hkt, claims, attestor, labels)
  RETURNING id
), reclaimed AS (
  UPDATE nodes n SET identity_generation = d.gen, state = d.state, trust = d.trust, claims = d.claims, updated_at = compute_now(),
         labels = n.labels || d.labels, pool_id = d.pool,
         hardware_key = CASE WHEN d.hkt THEN d.hk ELSE n.hardware_key END, hardware_key_trusted = n.hardware_key_trusted OR d.hkt
    FROM unnest($13::text[], $14::int[], $15::text[], $16::text[], $17::jsonb[], $38::jsonb[], $39::text[], $40::bytea[], $41::bool[])
      AS d(id, gen, state, trust, claims, labels, pool, hk, hkt)
   WHERE n.id = d.id
  RETURNING n.id
), revoked AS (
  UPDATE node_certs c SET revoked_at = compute_now(), revocation_reason = 'reclaimed'
   WHERE c.node_id = ANY($13::text[]) AND c.revoked_at IS NULL
  RETURNING c.serial, c.node_id
), certs AS (
  INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after, ca_pin, allowed_kinds)
  SELECT s, n, g, r, k, d, nb, na, ca, CASE WHEN jsonb_typeof(ak) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(ak)) END
    FROM unnest($18::text[], $19::text[], $20::int[], $21::text[], $22::bytea[], $23::bytea[], $24::timestamptz[], $25::timestamptz[], $36::text[], $42::jsonb[])
      AS x(s, n, g, r, k, d, nb, na, ca, ak)
  RETURNING 1
), projection AS (
  INSERT INTO authz_resources (resource, tenant_id, kind)
  SELECT 'compute-node/' || id, tenant, 'compute-node' FROM unnest($3::text[], $4::text[]) AS x(id, tenant)
  ON CONFLICT (resource) DO NOTHING
  RETURNING 1
), new_events AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT tenant, type, data FROM unnest($26::text[], $27::text[], $28::jsonb[]) AS x(tenant, type, data)
  RETURNING 1
), revoked_events AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT d.tenant, 'security.certificate-revoked', jsonb_build_object('nodeId', r.node_id, 'serial', r.serial, 'reason', 'reclaimed')
    FROM revoked r JOIN unnest($13::text[], $29::text[]) AS d(id, tenant) ON d.id = r.node_id
  RETURNING 1
), audit AS (
  INSERT INTO audit_log (tenant_id, actor, action, resource, data)
  SELECT tenant, actor, action, resource, data
    FROM unnest($30::text[], $31::text[], $32::text[], $33::text[], $34::jsonb[]) AS x(tenant, actor, action, resource, data)
  RETURNING 1
)
SELECT (SELECT count(*) FROM consume) AS tokens, (SELECT count(*) FROM certs) AS certs`;

/** The column arrays for {@link WRITE_ADMISSIONS_SQL}. */
export function admissionParams(rows: AdmissionRow[]): unknown[] {
  const uses = new Map<string, number>();
  const fresh = rows.filter((r) => !r.decision.reclaim);
  const reclaims = rows.filter((r) => r.decision.reclaim);
  const events: [string, string, string][] = [];
  const audit: [string, string, string, string, string][] = [];
  for (const row of rows) {
    if (row.tokenId) uses.set(row.tokenId, (uses.get(row.tokenId) ?? 0) + 1);
    const { decision, nodeId, cert, join } = row;
    const data = {
      nodeId,
      poolId: decision.poolId,
      siteId: decision.siteId,
      attestor: join.attestor,
      reclaim: decision.reclaim !== null,
      hardwareKeyTrusted: decision.hardwareKeyTrusted,
      certificateSerial: cert.serialHex,
      nodeKey: decision.nodeKey ?? 'unattested',
      role: decision.certRole,
      trust: decision.trust,
      identityGeneration: row.identityGeneration,
      ...(row.tokenId ? { tokenId: row.tokenId } : {}),
      // The node's labels after this admission (a reclaim keeps its own and merges the admission's over them).
      labels: mergeLabels(decision.reclaim?.labels, decision.labels),
    };
    const json = JSON.stringify(data);
    events.push([decision.tenantId, 'node.joined', json]);
    if (decision.autoAdmitted) {
      const { matchedNodeId, mac } = decision.autoAdmitted;
      events.push([
        decision.tenantId,
        'node.join-request.auto-admitted',
        JSON.stringify({ nodeId, matchedNodeId, mac, siteId: decision.siteId, attestor: join.attestor, tokenId: row.tokenId }),
      ]);
    }
    if (decision.state === 'adopted')
      events.push([decision.tenantId, 'node.adopted', JSON.stringify({ nodeId, poolId: decision.poolId, siteId: decision.siteId })]);
    audit.push([decision.tenantId, decision.actor, decision.reclaim ? 'node.reclaimed' : 'node.joined', `compute-node/${nodeId}`, json]);
  }
  const claimsJson = (r: AdmissionRow) => JSON.stringify(r.join.claims);
  const labelsJson = (r: AdmissionRow) => JSON.stringify(r.decision.labels ?? {});
  return [
    [...uses.keys()],
    [...uses.values()],
    fresh.map((r) => r.nodeId),
    fresh.map((r) => r.decision.tenantId),
    fresh.map((r) => r.decision.siteId),
    fresh.map((r) => r.decision.poolId),
    fresh.map((r) => r.decision.role),
    fresh.map((r) => r.decision.state),
    fresh.map((r) => r.decision.trust),
    fresh.map((r) => r.join.hardware.key),
    fresh.map((r) => r.decision.hardwareKeyTrusted),
    fresh.map(claimsJson),
    reclaims.map((r) => r.nodeId),
    reclaims.map((r) => r.identityGeneration),
    reclaims.map((r) => r.decision.state),
    reclaims.map((r) => r.decision.trust),
    reclaims.map(claimsJson),
    rows.map((r) => r.cert.serialHex),
    rows.map((r) => r.nodeId),
    rows.map((r) => r.identityGeneration),
    rows.map((r) => r.decision.certRole),
    rows.map((r) => r.join.spkiSha256),
    rows.map((r) => r.cert.der),
    rows.map((r) => r.cert.notBefore),
    rows.map((r) => r.cert.notAfter),
    events.map((e) => e[0]),
    events.map((e) => e[1]),
    events.map((e) => e[2]),
    reclaims.map((r) => r.decision.tenantId),
    audit.map((a) => a[0]),
    audit.map((a) => a[1]),
    audit.map((a) => a[2]),
    audit.map((a) => a[3]),
    audit.map((a) => a[4]),
    fresh.map((r) => r.join.attestor),
    rows.map((r) => r.caPin),
    fresh.map(labelsJson),
    reclaims.map(labelsJson),
    // Any other reclaim keeps the node's pool and key; a provisioned one (rebind) moves the node into the token's
    // pool and takes the machine's trusted key, when it has one.
    reclaims.map((r) => (r.decision.rebind ? r.decision.poolId : r.decision.reclaim!.poolId)),
    reclaims.map((r) => (r.decision.rebind ? r.join.trustedKey : null)),
    reclaims.map((r) => Boolean(r.decision.rebind) && r.join.trustedKey !== null),
    // Each certificate's allowed command kinds as JSON (`null`: no restriction), beside the other cert columns.
    rows.map((r) => JSON.stringify(r.decision.allowedKinds ?? null)),
  ];
}
