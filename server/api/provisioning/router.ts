import { requirePermission, router } from '../trpc';
import { userDataInput, userDataOutput } from '../../../protocol/api/provisioning-schemas';
import { provisioningUserData } from '../../provisioning/user-data';
import { createPkiSurface } from '../../provisioning/pki-surface';
import { downloadsDir } from '../../downloads/serve';

export const provisioningRouter = router({
  // A mutation: it mints a single-use token (the user data holds it).
  userData: requirePermission('compute:join-tokens:create')
    .input(userDataInput)
    .output(userDataOutput)
    .mutation(({ ctx, input }) =>
      provisioningUserData(ctx.db, ctx.pki ?? createPkiSurface(ctx.db), ctx.principal, input, downloadsDir(process.cwd())),
    ),
});
