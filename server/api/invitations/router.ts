import { z } from 'zod';
import { publicProcedure, router } from '../trpc';
import { domainList, domainMutation } from '../domain-procedure';
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
  create: domainMutation('compute:operators:manage', createInvitationInput, createdInvitation, createInvitation),
  list: domainList('compute:operators:read', listInvitationsInput, invitationList, listInvitations),
  revoke: domainMutation('compute:operators:manage', revokeInvitationInput, invitationRecord, revokeInvitation),
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
