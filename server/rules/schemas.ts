import { z } from 'zod';
import { idOf } from '../../protocol/api/resource-names';
import { labelsSchema } from '../../protocol/api/labels';

const printable = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]*$/u, 'must be printable');
const list = (item: z.ZodString) => z.array(item).min(1).max(1_000).optional();
const cidr = z.string().regex(/^[0-9a-fA-F:.]+\/\d{1,3}$/, 'a CIDR block such as 10.20.0.0/16');

/** What a rule matches on (server/rules/match.ts); at least one condition. */
const ruleMatch = z
  .strictObject({
    macPrefixes: list(z.string().regex(/^[0-9a-fA-F]{2}([:-]?[0-9a-fA-F]{2}){0,5}$/, 'a MAC or a prefix of one, such as 3c:ec:ef')),
    serials: list(printable(128)),
    productUuids: list(printable(64)),
    gpuUuids: list(printable(64)),
    hostnamePattern: printable(253).optional(),
    subnets: list(cidr),
    vouchedBy: list(printable(200)),
    attestor: z.enum(['discovery']).optional(),
    vendors: list(printable(128)),
    models: list(printable(128)),
  })
  .refine((m) => Object.values(m).some((v) => v !== undefined), { message: 'name at least one condition' });

const RULE_ACTIONS = ['approve', 'reject', 'leave'] as const;

const ruleBody = {
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  name: printable(100),
  match: ruleMatch,
  action: z.enum(RULE_ACTIONS),
  /** approve only: the pool of the site the machine is admitted into. */
  poolId: idOf('pool').optional(),
  /** approve only: at most this many admissions, then the rule stops deciding. */
  maxAdmissions: z.number().int().min(1).max(1_000_000).optional(),
  validUntil: z.iso.datetime({ offset: true }).optional(),
  /** false: the rule keeps its place and count but decides nothing. */
  enabled: z.boolean().optional(),
  /** approve only: labels the nodes it admits get, over the token's. An update keeps them when absent. */
  labels: labelsSchema.optional(),
};
const poolRule = (r: { action: string; poolId?: string; labels?: Record<string, string> }) =>
  (r.action === 'approve') === (r.poolId !== undefined) && (r.action === 'approve' || !Object.keys(r.labels ?? {}).length);
const poolMessage = { message: 'an approving rule names the pool (poolId) and may give labels; the others name neither', path: ['poolId'] };

export const createRuleInput = z.strictObject(ruleBody).refine(poolRule, poolMessage);
/**
 * The same draft, not saved: what the rule would decide among the site's recent requests. With `ruleId`, the
 * draft is an edit of that rule and keeps its place; without, it would be appended after the site's rules.
 */
export const dryRunRuleInput = z.strictObject({ ...ruleBody, ruleId: idOf('rule').optional() }).refine(poolRule, poolMessage);
export const listRulesInput = z.strictObject({ tenantId: idOf('tnt'), siteId: idOf('site') });
/**
 * The whole rule as it should be from now on (the console's form and the CLI send every field); fields left
 * out are cleared, except `enabled`, which keeps its value when absent.
 */
export const updateRuleInput = z.strictObject({ ...ruleBody, ruleId: idOf('rule') }).refine(poolRule, poolMessage);
/** Moves a rule to `position` (1 is the first to decide); the others keep their relative order. */
export const moveRuleInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  ruleId: idOf('rule'),
  position: z.number().int().min(1).max(10_000),
});
export const deleteRuleInput = z.strictObject({ tenantId: idOf('tnt'), siteId: idOf('site'), ruleId: idOf('rule') });

export const ruleRecord = z
  .object({
    id: z.string(),
    siteId: z.string(),
    position: z.number().int(),
    name: z.string(),
    match: z.record(z.string(), z.unknown()),
    action: z.enum(RULE_ACTIONS),
    poolId: z.string().nullable(),
    maxAdmissions: z.number().int().nullable(),
    admissions: z.number().int(),
    validUntil: z.string().nullable(),
    enabled: z.boolean(),
    createdBy: z.string(),
    createdAt: z.string(),
    labels: z.record(z.string(), z.string()),
  })
  .strict();
export type RuleRecord = z.infer<typeof ruleRecord>;
export const ruleList = z.object({ items: z.array(ruleRecord) }).strict();

/** One request a dry run looked at, and what the draft would do with it. */
export const dryRunAnswer = z
  .object({
    considered: z.number().int(),
    items: z.array(
      z
        .object({
          requestId: z.string(),
          state: z.string(),
          createdAt: z.string(),
          action: z.enum(RULE_ACTIONS),
          decidedEarlierBy: z.string().nullable(),
          mac: z.string().nullable(),
          hostname: z.string().nullable(),
        })
        .strict(),
    ),
    /** The conditions the draft names and where each value comes from: vouched by the boot step, or claimed. */
    matchedOn: z.array(z.object({ field: z.string(), source: z.enum(['vouched', 'claimed']) }).strict()),
  })
  .strict();
export type DryRunAnswer = z.infer<typeof dryRunAnswer>;
