import { hardwareClaimsSchema } from '../../protocol/hardware-claims';
import type { JoinRequestBody } from '../../protocol/join-wire';
import { JoinRefusal } from './crypto/refusal';
import { DEFAULT_ATTESTOR } from './attestors/names';
import { isKnownAttestor } from './attestors';

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ROLE = /^[a-z][a-z-]{0,31}$/;

/**
 * Parses the fields of a Join body every attestor shares (protocol.md); the attestor parses its own.
 * Unknown fields are ignored; anything malformed is a refusal like any other, so the answer never says
 * which part was wrong.
 */
export function parseJoinBody(raw: unknown): JoinRequestBody {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new JoinRefusal('join:malformed', 'body is not an object');
  const body = raw as Record<string, unknown>;
  const { csr, attestor = '', role = 'node' } = body;
  if (typeof csr !== 'string' || csr.length > 8192 || !B64.test(csr)) throw new JoinRefusal('join:malformed', 'csr');
  const named = attestor === '' ? DEFAULT_ATTESTOR : attestor;
  if (typeof named !== 'string' || !isKnownAttestor(named)) throw new JoinRefusal('join:malformed', 'attestor');
  if (typeof role !== 'string' || !ROLE.test(role)) throw new JoinRefusal('join:malformed', 'role');
  const claims = hardwareClaimsSchema.safeParse(body.claims ?? {});
  if (!claims.success) throw new JoinRefusal('join:malformed', 'claims');
  return {
    body,
    csr: Buffer.from(csr, 'base64'),
    claims: claims.data,
    attestor: named,
    role,
  };
}
