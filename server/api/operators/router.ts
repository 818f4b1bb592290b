import { router } from '../trpc';
import { domainList, domainMutation } from '../domain-procedure';
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
  list: domainList('compute:operators:read', listOperatorsInput, operatorList, listOperators),
  setRole: domainMutation('compute:operators:manage', setOperatorRoleInput, operatorRecord, setOperatorRole),
  remove: domainMutation('compute:operators:manage', removeOperatorInput, operatorRemoved, removeOperator),
});
