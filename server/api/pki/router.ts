import { router } from '../trpc';
import { activateRotation, prepareRotation, retireRotation, rotationStatus } from '../../pki/rotation/rotation';
import {
  activateRotationInput,
  prepareRotationInput,
  retireRotationInput,
  rotationStatusInput,
  rotationStatusRecord,
  rotationStepRecord,
} from '../../../protocol/api/pki-rotation-schemas';
import { pkiSecret, rootAdminProcedure } from './root-admin';

/** Trust rotation of the deployment's five keys: root tenant admins only, each step audited and published. */
const rotationRouter = router({
  status: rootAdminProcedure('compute:pki:read')
    .input(rotationStatusInput)
    .output(rotationStatusRecord)
    .query(({ ctx }) => rotationStatus(ctx.db, ctx.principal)),
  prepare: rootAdminProcedure('compute:pki:manage')
    .input(prepareRotationInput)
    .output(rotationStepRecord)
    .mutation(({ ctx, input }) => prepareRotation(ctx.db, ctx.principal, { ...input, secret: pkiSecret() })),
  activate: rootAdminProcedure('compute:pki:manage')
    .input(activateRotationInput)
    .output(rotationStepRecord)
    .mutation(({ ctx, input }) => activateRotation(ctx.db, ctx.principal, { ...input, secret: pkiSecret() })),
  retire: rootAdminProcedure('compute:pki:manage')
    .input(retireRotationInput)
    .output(rotationStepRecord)
    .mutation(({ ctx, input }) => retireRotation(ctx.db, ctx.principal, { ...input, secret: pkiSecret() })),
});

export const pkiRouter = router({ rotation: rotationRouter });
