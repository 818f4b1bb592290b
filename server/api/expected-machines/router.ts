import { requirePermission, router } from '../trpc';
import { importExpectedInput, importExpectedMachines, listExpectedInput, listExpectedMachines } from '../../expected/expected';
import { deleteExpectedInput, deleteExpectedMachines, listUnmatchedArrivals, unmatchedInput } from '../../expected/manage';
import { deleteExpectedAnswer, expectedList, importExpectedAnswer, unmatchedAnswer } from '../../../protocol/api/expected-schemas';

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
  delete: requirePermission('compute:sites:manage')
    .input(deleteExpectedInput)
    .output(deleteExpectedAnswer)
    .mutation(({ ctx, input }) => deleteExpectedMachines(ctx.db, ctx.principal, input)),
  unmatched: requirePermission('compute:sites:read')
    .input(unmatchedInput)
    .output(unmatchedAnswer)
    .query(({ ctx, input }) => listUnmatchedArrivals(ctx.db, ctx.principal, input)),
});
