import { z } from 'zod';
import { publicProcedure, requirePermission, router } from '../trpc';
import { ROLES } from '../../../protocol/api/permissions';
import {
  acceptInvitation,
  acceptInvitationInput,
  describeInvitation,
  describeInvitationInput,
  createInvitation,
  createInvitationInput,
  listInvitations,
  listInvitationsInput,
  revokeInvitation,
  revokeInvitationInput,
} from '../../operators/invitations';
import { createdInvitation, invitationList, invitationRecord } from '../../../protocol/api/operator-schemas';

/** Invitations to a tenant: one-time links an admin hands out; `accept` needs no session (the link is the proof). */
export const invitationsRouter = router({
  create: requirePermission('compute:operators:manage')
    .input(createInvitationInput)
    .output(createdInvitation)
    .mutation(({ ctx, input }) => createInvitation(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:operators:read')
    .input(listInvitationsInput)
    .output(invitationList)
    .query(async ({ ctx, input }) => ({ items: await listInvitations(ctx.db, ctx.principal, input) })),
  revoke: requirePermission('compute:operators:manage')
    .input(revokeInvitationInput)
    .output(invitationRecord)
    .mutation(({ ctx, input }) => revokeInvitation(ctx.db, ctx.principal, input)),
  accept: publicProcedure
    .input(acceptInvitationInput)
    .output(z.object({ operatorId: z.string(), email: z.string(), tenantId: z.string(), role: z.enum(ROLES) }))
    .mutation(({ ctx, input }) => acceptInvitation(ctx.db, input, ctx.clientAddress)),
  /**
   * What a usable link is for (tenant, role, inviter, email), before accepting; anything else is NOT_FOUND.
   * A mutation so the token travels in the body, never in a URL a log could keep.
   */
  describe: publicProcedure
    .input(describeInvitationInput)
    .output(
      z.object({ tenantName: z.string(), role: z.enum(ROLES), email: z.string(), invitedBy: z.string().nullable(), expiresAt: z.string() }),
    )
    .mutation(({ input, ctx }) => describeInvitation(ctx.db, input, ctx.clientAddress)),
});
