import { createHash, randomBytes } from 'node:crypto';
import { sealTokenSync } from '../../agent/seal-token';
import { hashTokenSecret } from '../tokens/secret';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { createTestTenant } from '../../test/fixtures';
import { testDb } from '../../test/db';
import { createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { verifyJoinAnswer } from '../../agent/verify-answer';
import { createPkiBundle } from '../pki/bundle/bundle';
import { joinCryptoFromBundle } from '../pki/issuance/join-crypto';
import { JoinService } from './join-service';
import { inProcessPreparer, isPrepared, prepareJoinBytes, type JoinPreparer } from './prepare';
import { ThreadedPreparer, joinThreadCount } from './prepare-worker-pool';
import { JOIN_FAILED, MAX_JOIN_BODY_BYTES } from '../../protocol/join-wire';

const fakeToken = () => `bcjt_jt_${randomBytes(13).toString('hex').slice(0, 26)}.${randomBytes(32).toString('base64url')}`;

let h: JoinHarness;
let threads: ThreadedPreparer;
beforeAll(async () => {
  h = await createJoinHarness();
  threads = new ThreadedPreparer(2);
});
afterAll(async () => {
  await threads.close();
});

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('ThreadedPreparer', () => {
  it('prepares exactly what the event loop would, for good and bad bodies alike', async () => {
    const good = await prepareJoinAttempt({ token: fakeToken(), trust: h.trust, claims: machineClaims() });
    const other = await prepareJoinAttempt({ token: fakeToken(), trust: h.trust, claims: machineClaims() });
    const swapped = JSON.stringify({ ...JSON.parse(good.body), sealedToken: other.sealedToken });
    const notACsr = Buffer.from('not a csr');
    const sealedForNotACsr = sealTokenSync(fakeToken(), h.trust.encryptionJwk, createHash('sha256').update(notACsr).digest('hex'));
    const badCsr = JSON.stringify({ ...JSON.parse(good.body), csr: notACsr.toString('base64'), sealedToken: sealedForNotACsr });
    const bodies: (Buffer | null)[] = [
      bytes(good.body),
      bytes(swapped),
      bytes(badCsr),
      bytes('{not json'),
      bytes('[]'),
      null,
      Buffer.alloc(MAX_JOIN_BODY_BYTES + 1, 0x20),
    ];
    const threaded = await Promise.all(bodies.map((body) => threads.prepare(body, h.crypto)));
    const local = bodies.map((body) => prepareJoinBytes(body, h.crypto));
    expect(threaded).toEqual(local);
    // The admitted one came back whole, its byte fields as Buffers again.
    const [first] = threaded;
    expect(isPrepared(first!)).toBe(true);
    if (!isPrepared(first!)) return;
    expect(Buffer.isBuffer(first.csr.spkiDer) && first.csr.spkiDer.equals(good.keys.spkiDer)).toBe(true);
    expect(Buffer.isBuffer(first.token?.secretHash) && Buffer.isBuffer(first.spkiSha256) && Buffer.isBuffer(first.trustedKey)).toBe(true);
    expect(threaded.slice(1).map((r) => !isPrepared(r) && r.reason)).toEqual([
      'join:token',
      'join:csr',
      'join:malformed',
      'join:malformed',
      'join:malformed',
      'join:malformed',
    ]);
  });

  it('answers each of many concurrent joins with its own preparation', async () => {
    const attempts = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const token = fakeToken();
        return { token, attempt: await prepareJoinAttempt({ token, trust: h.trust, claims: machineClaims() }) };
      }),
    );
    const results = await Promise.all(attempts.map(({ attempt }) => threads.prepare(bytes(attempt.body), h.crypto)));
    results.forEach((result, i) => {
      expect(isPrepared(result)).toBe(true);
      if (!isPrepared(result)) return;
      const [id, secret] = attempts[i]!.token.slice('bcjt_'.length).split('.');
      expect(result.token?.id).toBe(id);
      expect(result.token!.secretHash.equals(hashTokenSecret(secret!))).toBe(true);
      expect(result.csr.csrSha256).toBe(attempts[i]!.attempt.keys.csrSha256);
    });
  });

  it('takes the new encryption key when the server keys change', async () => {
    const next = joinCryptoFromBundle(createPkiBundle({ trustDomain: 'test.example.com' }));
    const sealedForNext = await prepareJoinAttempt({
      token: fakeToken(),
      trust: { ...h.trust, encryptionJwk: next.encryptionPublicJwk },
      claims: machineClaims(),
    });
    const single = new ThreadedPreparer(1);
    try {
      expect(isPrepared(await single.prepare(bytes(sealedForNext.body), h.crypto))).toBe(false);
      expect(isPrepared(await single.prepare(bytes(sealedForNext.body), next))).toBe(true);
      expect(isPrepared(await single.prepare(bytes(sealedForNext.body), h.crypto))).toBe(false);
    } finally {
      await single.close();
    }
  });

  it('fails only the joins a dead thread held, then starts a new thread', async () => {
    const single = new ThreadedPreparer(1);
    try {
      const attempt = await prepareJoinAttempt({ token: fakeToken(), trust: h.trust, claims: machineClaims() });
      expect(isPrepared(await single.prepare(bytes(attempt.body), h.crypto))).toBe(true);
      const worker = (single as unknown as { slots: { worker: { terminate(): Promise<number> } }[] }).slots[0]!.worker;
      // One batch of a thousand joins (a few hundred ms of work, answered only as a whole); the thread
      // dies while it holds them.
      const inFlight = Array.from({ length: 1000 }, () => single.prepare(bytes(attempt.body), h.crypto));
      await new Promise((resolve) => setImmediate(resolve));
      await worker.terminate();
      const settled = await Promise.allSettled(inFlight);
      expect(settled.every((s) => s.status === 'rejected' && /exited/.test(String(s.reason)))).toBe(true);
      expect(isPrepared(await single.prepare(bytes(attempt.body), h.crypto))).toBe(true);
    } finally {
      await single.close();
    }
  });

  it('refuses to prepare once closed', async () => {
    const single = new ThreadedPreparer(1);
    await single.close();
    await expect(single.prepare(bytes('{}'), h.crypto)).rejects.toThrow(/closed/);
  });
});

describe('JoinService with preparation threads', () => {
  const serviceWith = (preparer: JoinPreparer) =>
    new JoinService({ pool: h.pool, loadCrypto: async () => h.crypto, loadRootTenantId: async () => h.rootTenantId, preparer });

  it('admits a join prepared on a thread and answers a verifiable envelope', async () => {
    const service = serviceWith(threads);
    const t = await createTestTenant(testDb());
    const { token } = await mintToken(t);
    const attempt = await prepareJoinAttempt({ token: token!, trust: h.trust, claims: machineClaims() });
    const answer = await service.joinBody(bytes(attempt.body));
    expect(answer.status).toBe(200);
    const verified = verifyJoinAnswer(JSON.parse(answer.body.toString()), {
      signingKeyPin: h.trust.signingKeyPin,
      signingCertificateDer: h.trust.signingCertificateDer,
      csrSha256: attempt.keys.csrSha256,
      publicKeySpkiDer: attempt.keys.spkiDer,
      expectedRole: 'node',
    });
    expect(verified).toMatchObject({ status: 'joined', siteId: t.site.id });
    expect(await testDb().node.count({ where: { tenantId: t.tenantId } })).toBe(1);
  });

  it('answers INTERNAL, consuming nothing, when preparation itself fails', async () => {
    const broken: JoinPreparer = { prepare: async () => Promise.reject(new Error('thread lost')), close: async () => {} };
    const service = serviceWith(broken);
    const t = await createTestTenant(testDb());
    const minted = await mintToken(t);
    const attempt = await prepareJoinAttempt({ token: minted.token!, trust: h.trust, claims: machineClaims() });
    const answer = await service.joinBody(bytes(attempt.body));
    expect(answer.status).toBe(JOIN_FAILED.status);
    expect(answer.body.equals(JOIN_FAILED.body)).toBe(true);
    expect((await testDb().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
    // The same body still joins on the event loop.
    const again = new JoinService({
      pool: h.pool,
      loadCrypto: async () => h.crypto,
      loadRootTenantId: async () => h.rootTenantId,
      preparer: inProcessPreparer,
    });
    expect((await again.joinBody(bytes(attempt.body))).status).toBe(200);
  });
});

describe('joinThreadCount', () => {
  it('defaults to one thread, takes 0 to 64, and refuses anything else', () => {
    expect(joinThreadCount({})).toBe(1);
    expect(joinThreadCount({ BETTER_COMPUTE_JOIN_THREADS: '0' })).toBe(0);
    expect(joinThreadCount({ BETTER_COMPUTE_JOIN_THREADS: '4' })).toBe(4);
    for (const bad of ['-1', '65', '1.5', 'two']) {
      expect(() => joinThreadCount({ BETTER_COMPUTE_JOIN_THREADS: bad })).toThrow(/BETTER_COMPUTE_JOIN_THREADS/);
    }
  });
});
