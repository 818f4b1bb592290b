import { z } from 'zod';
import { authenticatedProcedure, router } from '../trpc';
import { changeOwnPassword, changePasswordInput } from '../../operators/change-password';

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
});
