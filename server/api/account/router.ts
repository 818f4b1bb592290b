import { z } from 'zod';
import { authenticatedProcedure, publicProcedure, router } from '../trpc';
import { completeSsoLink, completeSsoLinkInput } from '../../operators/sso-link';
import { DomainError } from '../../../protocol/errors';
import { changeOwnPassword, changePasswordInput } from '../../operators/change-password';
import { endOperatorSessions } from '../../operators/operators';

export const accountRouter = router({
  /**
   * `account.changePassword`: the signed-in operator's own password. The one procedure a session signed in
   * with a one-time password may call; it ends every session of the operator (sign in again with the new one).
   */
  changePassword: authenticatedProcedure
    .meta({ beforePasswordChange: true })
    .input(changePasswordInput)
    .output(z.object({ changed: z.literal(true) }))
    .mutation(({ ctx, input }) => changeOwnPassword(ctx.db, ctx.principal, input)),
  /** `account.signOutEverywhere`: ends every console session of the signed-in operator, on every instance. */
  signOutEverywhere: authenticatedProcedure
    .input(z.strictObject({}).optional())
    .output(z.object({ signedOut: z.literal(true) }))
    .mutation(async ({ ctx }) => {
      if (ctx.principal.kind !== 'operator') throw new DomainError('ACCESS_DENIED', 'Only a signed-in operator has sessions to end');
      await endOperatorSessions(ctx.db, ctx.principal.id);
      return { signedOut: true as const };
    }),
  /**
   * `account.linkSso`: completes a single sign-on link staged by a sign-in whose verified email is an existing
   * account's, with that account's password (through the sign-in throttle). No session: the one-time link
   * token and the password are the proof.
   */
  linkSso: publicProcedure
    .input(completeSsoLinkInput)
    .output(z.object({ email: z.string() }))
    .mutation(({ ctx, input }) => completeSsoLink(ctx.db, input, ctx.clientAddress)),
});
