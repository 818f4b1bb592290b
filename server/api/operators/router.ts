import { requirePermission, router } from '../trpc';
import {
  listOperators,
  listOperatorsInput,
  removeOperator,
  removeOperatorInput,
  setOperatorRole,
  setOperatorRoleInput,
} from '../../operators/members';
import { operatorList, operatorRecord, operatorRemoved } from '../../../protocol/api/operator-schemas';

/** A tenant's operators: listed, re-roled and removed by its admins (the last admin stays). */
export const operatorsRouter = router({
  list: requirePermission('compute:operators:read')
    .input(listOperatorsInput)
    .output(operatorList)
    .query(async ({ ctx, input }) => ({ items: await listOperators(ctx.db, ctx.principal, input) })),
  setRole: requirePermission('compute:operators:manage')
    .input(setOperatorRoleInput)
    .output(operatorRecord)
    .mutation(({ ctx, input }) => setOperatorRole(ctx.db, ctx.principal, input)),
  remove: requirePermission('compute:operators:manage')
    .input(removeOperatorInput)
    .output(operatorRemoved)
    .mutation(({ ctx, input }) => removeOperator(ctx.db, ctx.principal, input)),
});
