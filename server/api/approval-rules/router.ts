import { requirePermission, router } from '../trpc';
import { domainMutation, domainQuery } from '../domain-procedure';
import { createRule, deleteRule, dryRunRule, listRules, moveRule, updateRule } from '../../rules/rules';
import {
  createRuleInput,
  deleteRuleInput,
  dryRunAnswer,
  dryRunRuleInput,
  listRulesInput,
  moveRuleInput,
  ruleList,
  ruleRecord,
  updateRuleInput,
} from '../../rules/schemas';

/** A site's approval rules: decided on the site, like its discovery settings. */
export const approvalRulesRouter = router({
  list: domainQuery('compute:sites:read', listRulesInput, ruleList, listRules),
  create: domainMutation('compute:sites:manage', createRuleInput, ruleRecord, createRule),
  update: domainMutation('compute:sites:manage', updateRuleInput, ruleRecord, updateRule),
  move: requirePermission('compute:sites:manage')
    .input(moveRuleInput)
    .output(ruleList)
    .mutation(async ({ ctx, input }) => ({ items: await moveRule(ctx.db, ctx.principal, input) })),
  delete: domainMutation('compute:sites:manage', deleteRuleInput, ruleRecord, deleteRule),
  // A mutation for its body (a draft may list a thousand serials); it writes nothing.
  dryRun: domainMutation('compute:sites:manage', dryRunRuleInput, dryRunAnswer, dryRunRule),
});
