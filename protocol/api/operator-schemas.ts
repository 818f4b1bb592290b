import { z } from 'zod';
import { ROLES } from './permissions';

/** A member of a tenant as the API answers it (`operators.*`). */
export const operatorRecord = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  role: z.enum(ROLES),
  /** How the operator signs in: a password, single sign-on (OpenID Connect), or either. */
  signIn: z.enum(['password', 'sso', 'password-and-sso']),
  /** `sso`: the membership follows the OpenID provider's groups at each sign-in; `local`: admins manage it. */
  source: z.enum(['local', 'sso']),
  lastSignInAt: z.string().nullable(),
  memberSince: z.string(),
});
export type OperatorRecord = z.infer<typeof operatorRecord>;
export const operatorList = z.object({ items: z.array(operatorRecord) });
/** The answer of `operators.remove`. */
export const operatorRemoved = z.object({ removed: z.literal(true) });

/** An invitation as the API answers it (`invitations.*`). */
export const invitationRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  email: z.string(),
  role: z.enum(ROLES),
  state: z.enum(['pending', 'accepted', 'revoked', 'expired']),
  createdBy: z.string(),
  /** Who invited, as the console shows them: the operator's name, else email; null for other actors. */
  createdByName: z.string().nullable(),
  createdAt: z.string(),
  expiresAt: z.string(),
  acceptedAt: z.string().nullable(),
});
export type InvitationRecord = z.infer<typeof invitationRecord>;
/** The answer of `create`: the record, its one-time token, and whether the link also went out by mail. */
export const createdInvitation = invitationRecord.extend({ token: z.string(), emailed: z.boolean(), emailError: z.string().nullable() });
export type CreatedInvitation = z.infer<typeof createdInvitation>;
export const invitationList = z.object({ items: z.array(invitationRecord) });
