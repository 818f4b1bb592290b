import { requirePermission, router } from '../trpc';
import { expectedList, importExpectedAnswer, importExpectedInput, importExpectedMachines, listExpectedInput, listExpectedMachines } from '../../expected/expected';

/** A site's expected machines: imported lists whose machines join without waiting for a person. */
export const expectedMachinesRouter = router({
  import: requirePermission('compute:sites:manage')
    .input(importExpectedInput)
    .output(importExpectedAnswer)
    .mutation(({ ctx, input }) => importExpectedMachines(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:sites:read')
    .input(listExpectedInput)
    .output(expectedList)
    .query(({ ctx, input }) => listExpectedMachines(ctx.db, ctx.principal, input)),
});
