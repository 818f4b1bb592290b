import { router } from '../trpc';
import { domainMutation, domainQuery } from '../domain-procedure';
import { importExpectedInput, importExpectedMachines, listExpectedInput, listExpectedMachines } from '../../expected/expected';
import { deleteExpectedInput, deleteExpectedMachines, listUnmatchedArrivals, unmatchedInput } from '../../expected/manage';
import { deleteExpectedAnswer, expectedList, importExpectedAnswer, unmatchedAnswer } from '../../../protocol/api/expected-schemas';

/** A site's expected machines: imported lists whose machines join without waiting for a person. */
export const expectedMachinesRouter = router({
  import: domainMutation('compute:sites:manage', importExpectedInput, importExpectedAnswer, importExpectedMachines),
  list: domainQuery('compute:sites:read', listExpectedInput, expectedList, listExpectedMachines),
  delete: domainMutation('compute:sites:manage', deleteExpectedInput, deleteExpectedAnswer, deleteExpectedMachines),
  unmatched: domainQuery('compute:sites:read', unmatchedInput, unmatchedAnswer, listUnmatchedArrivals),
});
