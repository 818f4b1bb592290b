import { z } from 'zod';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import type { Role } from '../../protocol/api/permissions';
import { publishEvent, writeAudit } from '../events/publish';
import { MIN_PASSWORD_LENGTH } from './change-password';
import { PasswordHashingBusyError } from './hash-slots';
import { hashPassword } from './password';
import { SignInLockedError, authenticateOperator } from './sign-in';
import { operatorNames } from './operator-names';
import { addressBucket } from '../../protocol/address-bucket';
import { sql } from 'kysely';
import { hitRateLimit } from '../db/rate-limits';
import { usableByToken } from './link-token';
import { computeNow, lockTenant } from './shared-sql';

export const acceptInvitationInput = z.strictObject({
  token: z.string().min(1).max(200),
  /** A new operator's name and password; an existing operator gives their current password instead. */
  name: z.string().trim().min(1).max(100).optional(),
  password: z.string().min(1).max(1024),
});
export const describeInvitationInput = z.strictObject({ token: z.string().min(1).max(200) });

const TOKEN_PATTERN = /^bcinv_(inv_[0-9a-z]{26})\.([A-Za-z0-9_-]{43})$/;

type InvitationRow = {
  id: string;
  tenant_id: string;
  email: string;
  role: string;
  created_by: string;
  expires_at: Date;
  for_first_admin: boolean;
  secret_hash: Uint8Array;
  usable: boolean;
};

const unusable = () =>
  new DomainError('NOT_FOUND', 'This invitation link is not valid: it was used, revoked or has expired, or it was mistyped');

/**
 * One answer for a wrong password of an existing account and for a new person who left out their name or
 * chose too short a password, so the answer never tells whether the invited email already has an account.
 */
const notAccepted = () =>
  new DomainError(
    'INVALID_ARGUMENT',
    `password: not accepted. If you already have an account, give its current password; if not, give your name and a new password of at least ${MIN_PASSWORD_LENGTH} characters`,
    { field: 'password' },
  );

const busy = () =>
  new DomainError('INVALID_STATE', 'Too many password checks at once (from your address or on this server): try again in a moment');

/** Unusable invitation links one client address may try (describe or accept) per minute, every instance together. */
export const INVITATION_LINKS_PER_ADDRESS = 30;
const LINK_WINDOW_SECONDS = 60;

/**
 * The shared count (PostgreSQL `rate_limits`, through `rate_limit_hit`) of invitation links a client address tried
 * that named no usable invitation. A usable link is never counted: its holder's password tries have the sign-in
 * throttle. `unknown` (a caller the boot server did not see: tests, the CLI in-process) is not counted.
 */
const linkKey = (clientAddress: string) => `invitation-link:${addressBucket(clientAddress)}`;

/** Refuses, before the link is read, an address whose window already holds its share of unusable links. */
async function assertLinkLookupsLeft(db: Db, clientAddress: string): Promise<void> {
  if (clientAddress === 'unknown') return;
  const full = await typed(db)
    .selectFrom('rate_limits')
    .select((eb) => eb('count', '>=', INVITATION_LINKS_PER_ADDRESS).as('full'))
    .where('key', '=', linkKey(clientAddress))
    .where('window_start', '>', sql<Date>`compute_now() - make_interval(secs => ${LINK_WINDOW_SECONDS})`)
    .executeTakeFirst();
  if (full?.full)
    throw new DomainError('INVALID_STATE', 'Too many invitation links tried from your address: wait a minute, then open the link again');
}

/** Counts one unusable link against the address; the error to answer with. */
async function countUnusableLink(db: Db, clientAddress: string): Promise<DomainError> {
  if (clientAddress !== 'unknown') await hitRateLimit(db, linkKey(clientAddress), INVITATION_LINKS_PER_ADDRESS, LINK_WINDOW_SECONDS);
  return unusable();
}

/**
 * The invitation a token names, when the token is exactly one of ours, its secret matches (constant time)
 * and it is still usable; else null. Nothing costly runs before this answers.
 */
function findUsableInvitation(db: Db | Tx, token: string, lock: boolean): Promise<InvitationRow | null> {
  return usableByToken(token, TOKEN_PATTERN, (id) =>
    typed(db)
      .selectFrom('invitations')
      .select(['id', 'tenant_id', 'email', 'role', 'created_by', 'expires_at', 'for_first_admin', 'secret_hash'])
      .select((eb) =>
        eb
          .and([eb('accepted_at', 'is', null), eb('revoked_at', 'is', null), eb('expires_at', '>', computeNow)])
          .$castTo<boolean>()
          .as('usable'),
      )
      .where('id', '=', id)
      .$if(lock, (q) => q.forUpdate())
      .executeTakeFirst(),
  );
}

/**
 * What a usable invitation link is for, shown before the person accepts: the tenant's name, the role, who
 * invited and the invited email. A link that is not usable (mistyped, forged, spent, revoked, expired)
 * learns nothing but NOT_FOUND. Needs no session: the link is the proof, as for accepting.
 */
export async function describeInvitation(
  db: Db,
  input: z.infer<typeof describeInvitationInput>,
  clientAddress = 'unknown',
): Promise<{ tenantName: string; role: Role; email: string; invitedBy: string | null; expiresAt: string }> {
  await assertLinkLookupsLeft(db, clientAddress);
  const row = await findUsableInvitation(db, input.token, false);
  if (!row) throw await countUnusableLink(db, clientAddress);
  const [tenant, names] = await Promise.all([
    db.tenant.findUniqueOrThrow({ where: { id: row.tenant_id }, select: { name: true } }),
    operatorNames(db, [row.created_by]),
  ]);
  return {
    tenantName: tenant.name,
    role: row.role as Role,
    email: row.email,
    invitedBy: names.get(row.created_by) ?? null,
    expiresAt: row.expires_at.toISOString(),
  };
}

/** The existing account's password, through the sign-in throttle (the same counts as the sign-in form). */
async function proveAccount(db: Db, email: string, password: string, clientAddress: string): Promise<string> {
  try {
    const operator = await authenticateOperator(db, email, password, clientAddress);
    if (!operator) throw notAccepted();
    return operator.id;
  } catch (error) {
    if (error instanceof SignInLockedError) {
      throw new DomainError(
        'INVALID_STATE',
        `Too many failed attempts: try again in ${Math.max(1, error.retryAfterSeconds)} seconds, or sign in and reset your password`,
      );
    }
    if (error instanceof PasswordHashingBusyError) throw busy();
    throw error;
  }
}

/**
 * Accepts an invitation (no session needed: the token is the proof). The token is looked up and its
 * secret compared before any password is hashed. A new person sets a name and a password; someone who
 * already is an operator proves it with their current password, checked through the sign-in throttle
 * (per account and address, per address), and gains the membership. Both failures answer alike. The
 * invitation is spent in the same transaction (row lock), so a link works exactly once; one a root admin
 * staged for a tenant's first admin is refused once the tenant has an admin of its own.
 */
export async function acceptInvitation(
  db: Db,
  input: z.infer<typeof acceptInvitationInput>,
  clientAddress = 'unknown',
): Promise<{ operatorId: string; email: string; tenantId: string; role: Role }> {
  await assertLinkLookupsLeft(db, clientAddress);
  const invitation = await findUsableInvitation(db, input.token, false);
  if (!invitation) throw await countUnusableLink(db, clientAddress);
  const exists = (await db.operator.count({ where: { email: invitation.email } })) > 0;
  let passwordHash: string | null = null;
  let provenId: string | null = null;
  if (!exists && input.name && input.password.length >= MIN_PASSWORD_LENGTH) {
    passwordHash = await hashPassword(input.password, { address: clientAddress }).catch((error: unknown) => {
      throw error instanceof PasswordHashingBusyError ? busy() : error;
    });
  } else {
    // An unknown email goes through the throttle too (and always fails), so both cases count and answer alike.
    provenId = await proveAccount(db, invitation.email, input.password, clientAddress);
  }
  return db.$transaction(async (tx) => {
    const row = await findUsableInvitation(tx, input.token, true);
    if (!row) throw unusable();
    // The tenant's row lock orders this with first-admin invitations and keys being created for it.
    await lockTenant(tx, row.tenant_id);
    if (row.for_first_admin && (await tx.membership.count({ where: { tenantId: row.tenant_id, role: 'admin' } })) > 0) {
      throw new DomainError(
        'INVALID_STATE',
        'This invitation was for the first admin of the tenant, which has admins now: ask them to invite you',
      );
    }
    let operator = await tx.operator.findUnique({ where: { email: row.email } });
    // The account appeared or went while the password was checked: this attempt proved nothing about it.
    if (operator ? operator.id !== provenId : !passwordHash || !input.name) throw notAccepted();
    operator ??= await tx.operator.create({ data: { id: newId('op'), email: row.email, name: input.name!, passwordHash: passwordHash! } });
    await tx.membership.upsert({
      where: { operatorId_tenantId: { operatorId: operator.id, tenantId: row.tenant_id } },
      create: { operatorId: operator.id, tenantId: row.tenant_id, role: row.role },
      update: { role: row.role },
    });
    await tx.invitation.update({ where: { id: row.id }, data: { acceptedAt: new Date(), acceptedBy: operator.id } });
    const actor = `operator:${operator.id}`;
    const data = { invitationId: row.id, operatorId: operator.id, email: row.email, role: row.role };
    await writeAudit(tx, { tenantId: row.tenant_id, actor, action: 'operator.joined', resource: `compute-operator/${operator.id}`, data });
    await publishEvent(tx, { tenantId: row.tenant_id, type: 'operator.joined', data });
    return { operatorId: operator.id, email: row.email, tenantId: row.tenant_id, role: row.role as Role };
  });
}
