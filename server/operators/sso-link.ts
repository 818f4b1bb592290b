import { z } from 'zod';
import type { Tx, Db } from '../db/client';
import { sql } from 'kysely';
import { typed } from '../db/typed';
import { computeNow } from './shared-sql';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { writeAudit } from '../events/publish';
import { hashTokenSecret, newTokenSecret } from '../tokens/secret';
import { usableByToken } from './link-token';
import { PasswordHashingBusyError } from './hash-slots';
import { SignInLockedError, authenticateOperator } from './sign-in';

/** How long a staged link waits for the account's password. */
const SSO_LINK_TTL_MINUTES = 15;
const TOKEN_PATTERN = /^bcsso_(ssl_[0-9a-z]{26})\.([A-Za-z0-9_-]{43})$/;

export const completeSsoLinkInput = z.strictObject({ token: z.string().min(1).max(200), password: z.string().min(1).max(1024) });

/**
 * Whether single sign-on may take this operator over by its verified email alone: only an operator with no
 * password of its own (nothing to prove) who is not a root admin. Anyone else proves the account's password.
 */
export async function needsExplicitSsoLink(tx: Tx, operatorId: string): Promise<boolean> {
  const operator = await tx.operator.findUnique({ where: { id: operatorId }, select: { passwordHash: true } });
  if (operator?.passwordHash.startsWith('scrypt$')) return true;
  return (await tx.membership.count({ where: { operatorId, role: 'admin', tenant: { isRoot: true } } })) > 0;
}

/** Stages a link of `subject` to the operator, valid 15 minutes; the one-time token `bcsso_<id>.<secret>` completes it. */
export async function stageSsoLink(tx: Tx, operatorId: string, subject: string): Promise<string> {
  const id = newId('ssl');
  const secret = newTokenSecret();
  await typed(tx)
    .insertInto('sso_links')
    .values({
      id,
      secret_hash: hashTokenSecret(secret),
      operator_id: operatorId,
      oidc_subject: subject,
      expires_at: sql<Date>`compute_now() + make_interval(mins => ${SSO_LINK_TTL_MINUTES})`,
    })
    .execute();
  return `bcsso_${id}.${secret}`;
}

const unusable = () =>
  new DomainError('NOT_FOUND', 'This link request is not valid: it was used or has expired. Sign in with single sign-on again');

type LinkRow = { id: string; operator_id: string; oidc_subject: string; secret_hash: Uint8Array; usable: boolean };

function findUsableLink(db: Db | Tx, token: string, lock: boolean): Promise<LinkRow | null> {
  return usableByToken(token, TOKEN_PATTERN, (id) =>
    typed(db)
      .selectFrom('sso_links')
      .select(['id', 'operator_id', 'oidc_subject', 'secret_hash'])
      .select((eb) =>
        eb
          .and([eb('used_at', 'is', null), eb('expires_at', '>', computeNow)])
          .$castTo<boolean>()
          .as('usable'),
      )
      .where('id', '=', id)
      .$if(lock, (q) => q.forUpdate())
      .executeTakeFirst(),
  );
}

/**
 * Completes a staged link: the account proves its password, through the sign-in throttle (the same counts
 * as the sign-in form), and the single sign-on identity becomes the operator's. The next single sign-on then
 * signs in as that operator, with its memberships. Audited in each tenant of the operator.
 */
export async function completeSsoLink(
  db: Db,
  input: z.infer<typeof completeSsoLinkInput>,
  clientAddress = 'unknown',
): Promise<{ email: string }> {
  const link = await findUsableLink(db, input.token, false);
  if (!link) throw unusable();
  const operator = await db.operator.findUnique({ where: { id: link.operator_id }, select: { email: true } });
  if (!operator) throw unusable();
  try {
    const proven = await authenticateOperator(db, operator.email, input.password, clientAddress);
    if (proven?.id !== link.operator_id) {
      throw new DomainError('INVALID_ARGUMENT', 'password: not the password of this account', { field: 'password' });
    }
  } catch (error) {
    if (error instanceof SignInLockedError) {
      throw new DomainError('INVALID_STATE', `Too many failed attempts: try again in ${Math.max(1, error.retryAfterSeconds)} seconds`);
    }
    if (error instanceof PasswordHashingBusyError)
      throw new DomainError('INVALID_STATE', 'Too many password checks at once: try again in a moment');
    throw error;
  }
  return db.$transaction(async (tx) => {
    const row = await findUsableLink(tx, input.token, true);
    if (!row) throw unusable();
    const current = await typed(tx)
      .selectFrom('operators')
      .select('oidc_subject')
      .where('id', '=', row.operator_id)
      .forUpdate()
      .executeTakeFirst();
    if (!current) throw unusable();
    const holder = await tx.operator.findUnique({ where: { oidcSubject: row.oidc_subject }, select: { id: true } });
    if ((current.oidc_subject && current.oidc_subject !== row.oidc_subject) || (holder && holder.id !== row.operator_id)) {
      throw new DomainError('CONFLICT', 'This account or this single sign-on identity is linked to another already');
    }
    await tx.operator.update({ where: { id: row.operator_id }, data: { oidcSubject: row.oidc_subject } });
    await typed(tx).updateTable('sso_links').set({ used_at: computeNow }).where('id', '=', row.id).execute();
    const memberships = await tx.membership.findMany({ where: { operatorId: row.operator_id }, select: { tenantId: true } });
    for (const { tenantId } of memberships) {
      await writeAudit(tx, {
        tenantId,
        actor: `operator:${row.operator_id}`,
        action: 'operator.sso-linked',
        resource: `compute-operator/${row.operator_id}`,
        data: { issuer: row.oidc_subject.split(' ')[0] ?? null },
      });
    }
    return { email: operator.email };
  });
}
