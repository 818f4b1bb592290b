import { requirePermission, router } from '../trpc';
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
  list: requirePermission('compute:sites:read')
    .input(listRulesInput)
    .output(ruleList)
    .query(({ ctx, input }) => listRules(ctx.db, ctx.principal, input)),
  create: requirePermission('compute:sites:manage')
    .input(createRuleInput)
    .output(ruleRecord)
    .mutation(({ ctx, input }) => createRule(ctx.db, ctx.principal, input)),
  update: requirePermission('compute:sites:manage')
    .input(updateRuleInput)
    .output(ruleRecord)
    .mutation(({ ctx, input }) => updateRule(ctx.db, ctx.principal, input)),
  move: requirePermission('compute:sites:manage')
    .input(moveRuleInput)
    .output(ruleList)
    .mutation(async ({ ctx, input }) => ({ items: await moveRule(ctx.db, ctx.principal, input) })),
  delete: requirePermission('compute:sites:manage')
    .input(deleteRuleInput)
    .output(ruleRecord)
    .mutation(({ ctx, input }) => deleteRule(ctx.db, ctx.principal, input)),
  dryRun: requirePermission('compute:sites:manage')
    .input(dryRunRuleInput)
    .output(dryRunAnswer)
    // A mutation for its body (a draft may list a thousand serials); it writes nothing.
    .mutation(({ ctx, input }) => dryRunRule(ctx.db, ctx.principal, input)),
});
