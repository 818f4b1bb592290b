import { hardwareClaimsSchema } from '../../protocol/hardware-claims';
import { KNOWN_ATTESTORS, type JoinRequestBody } from '../../protocol/join-wire';
import { JoinRefusal } from './crypto/refusal';

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ROLE = /^[a-z][a-z-]{0,31}$/;

/**
 * Parses a Join body (protocol.md). Unknown fields are ignored; anything malformed is a refusal like any
 * other, so the answer never says which part was wrong.
 */
export function parseJoinBody(raw: unknown): JoinRequestBody {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new JoinRefusal('join:malformed', 'body is not an object');
  const body = raw as Record<string, unknown>;
  const { sealedToken, csr, attestor = '', role = 'node' } = body;
  if (typeof sealedToken !== 'string' || sealedToken.length === 0) throw new JoinRefusal('join:malformed', 'sealedToken');
  if (typeof csr !== 'string' || csr.length > 8192 || !B64.test(csr)) throw new JoinRefusal('join:malformed', 'csr');
  const named = attestor === '' ? 'join-token' : attestor;
  if (typeof named !== 'string' || !(KNOWN_ATTESTORS as readonly string[]).includes(named)) throw new JoinRefusal('join:malformed', 'attestor');
  if (typeof role !== 'string' || !ROLE.test(role)) throw new JoinRefusal('join:malformed', 'role');
  const claims = hardwareClaimsSchema.safeParse(body.claims ?? {});
  if (!claims.success) throw new JoinRefusal('join:malformed', 'claims');
  return {
    sealedToken,
    csr: Buffer.from(csr, 'base64'),
    claims: claims.data,
    attestor: named,
    role,
  };
}
