/**
 * Run by the rolling-upgrade drill inside the PREVIOUS release's tree (copied to the same path there, so the
 * imports below are that release's modules and its Prisma client, which matches the schema it migrated): what
 * the drill needs from a database that the new release's client cannot read yet. Prints one JSON line: the
 * join token (a large maxUses), the tenant, what agents pin (JoinTrust, base64) and a gateway's credentials.
 *
 * Env: DATABASE_URL, BETTER_COMPUTE_SECRET, UPGRADE_MAX_USES.
 */
import { createDb } from '../../server/db/client';
import { loadPki } from '../../server/pki/bundle/store';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { joinCryptoFromBundle } from '../../server/pki/issuance/join-crypto';
import { installPins } from '../../server/pki/pins-summary';
import { getRootTenant } from '../../server/tenants/tenants';
import { issueJoinToken } from '../../server/tokens/issue';

const db = createDb(process.env.DATABASE_URL!, { max: 2 });
const secret = process.env.BETTER_COMPUTE_SECRET!;
const bundle = await loadPki(db, secret);
const root = await getRootTenant(db);
if (!root) throw new Error('the previous release has not bootstrapped this database');
const pool = await db.pool.findFirstOrThrow({ where: { ownerTenantId: root.id, name: 'default' } });
const { token, record } = await issueJoinToken(db, {
  tenantId: root.id,
  poolId: pool.id,
  siteId: pool.siteId,
  role: 'node',
  ttlSeconds: 3600,
  maxUses: Number(process.env.UPGRADE_MAX_USES),
  createdBy: 'test:upgrade',
});
const crypto = joinCryptoFromBundle(bundle);
const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
process.stdout.write(
  `${JSON.stringify({
    token,
    tokenId: record.id,
    tenantId: root.id,
    trust: {
      encryptionJwk: crypto.encryptionPublicJwk,
      signingCertificateDer: crypto.signingCertificate,
      signingKeyPin: crypto.signingKeyPin,
    },
    credentials: { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem },
    servingCaPin: installPins(bundle).servingCaPin,
  })}\n`,
);
await db.$disconnect();
