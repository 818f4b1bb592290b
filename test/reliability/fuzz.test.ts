import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { newId } from '../../server/ids';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { issueJoinToken } from '../../server/tokens/issue';
import { createTestTenant } from '../fixtures';
import { machineClaims } from '../join-harness';
import { defaultPool, newServerSecret, startServedDatabase, type ServerDatabase, type ServerProcess } from '../server-process';
import { forEachConcurrently, rawHttpClient, type RawAnswer } from './http-client';
import { mutateBody } from './mutate-body';
import { runSeed, seededRandom, type SeededRandom } from './seeded-random';

// Reliability figure (issue 8): at least 10,000 generated join and REST bodies (mutations of valid ones)
// against a running server answer no 5xx and change no state. Every base body is one the server must
// refuse whatever a mutation does to it: joins name a token that is used up, revoked, unknown or given
// with a wrong secret (or replay an admitted request); REST bodies go to paths whose resource does not
// exist or to an action the key may not take, and the path decides the resource. So any row written is
// a bug, and so is any 5xx. Seeded: RELIABILITY_SEED=<printed seed> replays the same bodies.

const JOIN_BODIES = 5000;
const REST_BODIES = 5000;
const CONCURRENCY = 8;
const JOIN_B64_FIELDS = new Set(['sealedToken', 'csr']);

const seed = runSeed();
const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let trust: JoinTrust;

beforeAll(async () => {
  process.stdout.write(`fuzz: RELIABILITY_SEED=${seed}\n`);
  ({ database, server, trust } = await startServedDatabase('fuzz', secret));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await database?.close();
});

/** Every table a join or a REST call could write, as a row count and a digest of its rows. */
async function snapshot() {
  const tables: [string, string][] = [
    ['tenants', ''],
    ['operators', ''],
    ['memberships', ''],
    // Authenticating stamps last_used_at: that is the key being used, not a state change of the key.
    ['api_keys', "- 'last_used_at'"],
    ['sites', ''],
    ['pools', ''],
    ['join_tokens', ''],
    ['nodes', ''],
    ['node_certs', ''],
    ['join_requests', ''],
    ['authz_resources', ''],
    ['audit_log', ''],
    ['pki_bundles', ''],
  ];
  const out: Record<string, string> = {};
  for (const [table, minus] of tables) {
    const rows = await database.db.$queryRawUnsafe<{ n: number; digest: string }[]>(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg((to_jsonb(t) ${minus})::text, ',' ORDER BY (to_jsonb(t) ${minus})::text), '')) AS digest FROM ${table} t`,
    );
    out[table] = `${rows[0]!.n} rows, ${rows[0]!.digest}`;
  }
  const uses = await database.db.$queryRawUnsafe<{ n: number }[]>('SELECT coalesce(sum(uses_left), 0)::int AS n FROM join_tokens');
  out.usesLeft = String(uses[0]!.n);
  // Refusal events are what a refused join is meant to write; every other event would be a change.
  const events = await database.db.$queryRawUnsafe<{ n: number }[]>(
    "SELECT count(*)::int AS n FROM events WHERE type <> 'security.join.refused'",
  );
  out.events = String(events[0]!.n);
  return out;
}

interface Sent {
  target: string;
  description: string;
  answer: RawAnswer;
  body: Buffer;
}

const CONTENT_TYPES = [
  'application/json',
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json-seq',
  '',
];

describe('fuzzed join and REST bodies', () => {
  it(`${JOIN_BODIES + REST_BODIES} bodies: no 5xx, no state change (seed ${seed})`, { timeout: 300_000 }, async () => {
    const db = database.db;
    const random: SeededRandom = seededRandom(seed);
    const home = await defaultPool(db);
    const mint = async (maxUses: number) =>
      issueJoinToken(db, {
        tenantId: home.ownerTenantId,
        poolId: home.id,
        siteId: home.siteId,
        role: 'node',
        ttlSeconds: 3600,
        maxUses,
        createdBy: 'test:fuzz',
      });
    const client = rawHttpClient(CONCURRENCY);
    const post = (path: string, body: Buffer | string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
      client.send('POST', `${server.url}/api/compute${path}`, { body, headers });

    // Join bases. A used-up token: its one admission happens here, before the snapshot.
    const spent = await mint(1);
    const admitted = await prepareJoinAttempt({ token: spent.token!, trust, claims: machineClaims() });
    expect((await post('/v1/join', admitted.body)).status).toBe(200);
    const revoked = await mint(5);
    await db.joinToken.update({ where: { id: revoked.record.id }, data: { revokedAt: new Date() } });
    // Well-formed bearers: a known token id with a wrong secret, and an id that does not exist.
    const wrongSecret = `bcjt_${spent.record.id}.${'A'.repeat(43)}`;
    const unknown = `bcjt_${newId('jt')}.${'A'.repeat(43)}`;
    const joinBases: Record<string, unknown>[] = [JSON.parse(admitted.body)];
    for (const token of [spent.token!, revoked.token!, wrongSecret, unknown]) {
      for (const role of ['node', 'ramdisk']) {
        joinBases.push(JSON.parse((await prepareJoinAttempt({ token, trust, claims: machineClaims(), role })).body));
      }
    }
    // Each base is refused as it is: a base that joined would make every mutation of it meaningless.
    for (const base of joinBases) expect((await post('/v1/join', JSON.stringify(base))).body.equals(JOIN_REFUSED.body)).toBe(true);

    // REST bases: a tenant of its own with an admin and a viewer key; resources that do not exist.
    const t = await createTestTenant(db, { label: 'fuzz' });
    const adminKey = (await insertApiKey(db, { tenantId: t.tenantId, role: 'admin', name: 'fuzz-admin' }, 'test:fuzz')).key;
    const viewerKey = (await insertApiKey(db, { tenantId: t.tenantId, role: 'viewer', name: 'fuzz-viewer' }, 'test:fuzz')).key;
    const T = `/v1/tenants/${t.tenantId}`;
    const elsewhere = `/v1/tenants/${newId('tnt')}`;
    const noPool = newId('pool');
    const restBases: { path: string; body: Record<string, unknown> }[] = [
      // A tenant admin is not a root admin: creating a tenant is refused, whatever the name.
      { path: '/v1/tenants', body: { name: 'fuzz-new-tenant' } },
      { path: `${elsewhere}/sites`, body: { name: 'site-b', kind: 'custom' } },
      {
        path: `${T}/pools`,
        body: {
          siteId: newId('site'),
          name: 'pool-b',
          agent: 'bcd',
          policy: { joinAttestors: ['join-token'], kubernetes: { platformOperated: false }, acceptance: [{ check: 'identity' }] },
          acceptanceChecks: ['identity'],
        },
      },
      { path: `${elsewhere}/pools`, body: { siteId: t.siteId, name: 'pool-c', agent: 'none' } },
      {
        path: `${T}/pools/${noPool}/join-tokens`,
        body: {
          ttlSeconds: 3600,
          maxUses: 5,
          expect: { productUuid: '4c4c4544-0042-3510-8052-b7c04f4d3732', serial: 'SN-1', mac: '3c:ec:ef:00:00:01', gpuUuid: null },
          allowReclaim: true,
          hosted: null,
          idempotencyKey: 'fuzz-1',
        },
      },
      { path: `${elsewhere}/pools/${t.poolId}/join-tokens`, body: { ttlSeconds: 60, maxUses: 1 } },
      { path: `${T}/pools/${t.poolId}/join-tokens/${newId('jt')}/revoke`, body: {} },
      { path: `${T}/sites/${newId('site')}/archive`, body: {} },
      { path: `${T}/pools/${noPool}/archive`, body: {} },
      { path: `${elsewhere}/api-keys`, body: { role: 'admin', name: 'ci' } },
      { path: `${T}/api-keys/${newId('ak')}/revoke`, body: {} },
    ];
    for (const base of restBases) {
      const answer = await post(base.path, JSON.stringify(base.body), {
        'content-type': 'application/json',
        authorization: `Bearer ${adminKey}`,
      });
      expect(answer.status, `${base.path} as it is`).toBeGreaterThanOrEqual(400);
      expect(answer.status, `${base.path} as it is`).toBeLessThan(500);
    }

    const before = await snapshot();
    const requests: (() => Promise<Sent>)[] = [];
    for (let i = 0; i < JOIN_BODIES; i++) {
      const { body, description } = mutateBody(random, random.pick(joinBases), JOIN_B64_FIELDS);
      requests.push(async () => ({ target: 'POST /v1/join', description, body, answer: await post('/v1/join', body) }));
    }
    for (let i = 0; i < REST_BODIES; i++) {
      const base = random.pick(restBases);
      const { body, description } = mutateBody(random, base.body);
      const auth = random.pick(['admin', 'admin', 'admin', 'admin', 'admin', 'admin', 'viewer', 'none', 'garbage']);
      const headers: Record<string, string> = {};
      const contentType = random.pick(CONTENT_TYPES);
      if (contentType) headers['content-type'] = contentType;
      if (auth !== 'none') headers.authorization = `Bearer ${auth === 'admin' ? adminKey : auth === 'viewer' ? viewerKey : 'bcak_garbage'}`;
      const what = `${description} [${auth}, ${contentType || 'no content-type'}]`;
      requests.push(async () => ({ target: `POST ${base.path}`, description: what, body, answer: await post(base.path, body, headers) }));
    }

    const failures: string[] = [];
    const joinAnswers: Record<string, number> = {};
    const restAnswers: Record<string, number> = {};
    await forEachConcurrently(requests.length, CONCURRENCY, async (i) => {
      const sent = await requests[i]!();
      const { status, body } = sent.answer;
      const isJoin = sent.target === 'POST /v1/join';
      const tally = isJoin ? joinAnswers : restAnswers;
      tally[status] = (tally[status] ?? 0) + 1;
      let problem = '';
      if (status >= 500) problem = `answered ${status} ${body.toString('utf8').slice(0, 120)}`;
      // Every refused join answers the same bytes, whatever was wrong with it.
      else if (isJoin && !body.equals(JOIN_REFUSED.body)) problem = `join answered ${status} ${body.toString('utf8').slice(0, 120)}`;
      else if (!isJoin && !(status >= 400 && typeof safeJson(body)?.code === 'string'))
        problem = `REST answered ${status} ${body.toString('utf8').slice(0, 120)}`;
      if (problem)
        failures.push(
          `#${i} ${sent.target}: ${sent.description}: ${problem} (body ${sent.body.length} bytes, starts ${JSON.stringify(sent.body.subarray(0, 80).toString('latin1'))})`,
        );
    });
    client.close();

    process.stdout.write(`fuzz (seed ${seed}): join answers ${JSON.stringify(joinAnswers)}, REST answers ${JSON.stringify(restAnswers)}\n`);
    expect(failures.slice(0, 20), `${failures.length} of ${requests.length} bodies failed (RELIABILITY_SEED=${seed})`).toEqual([]);
    expect(await snapshot()).toEqual(before);
    // Still serving (a crash would have failed the requests above), and nothing it logged was an error.
    expect(server.child.exitCode).toBeNull();
    expect(server.log.filter((line) => line.includes('"level":"error"')).slice(0, 5)).toEqual([]);
  });
});

function safeJson(body: Buffer): { code?: unknown } | null {
  try {
    return JSON.parse(body.toString('utf8')) as { code?: unknown };
  } catch {
    return null;
  }
}
