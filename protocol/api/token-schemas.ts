import { z } from 'zod';
import { labelsSchema } from './labels';
import { DomainError } from '../errors';
import { pageDirection, idOf } from './resource-names';

/** What kind of agent a token admits (joining.md, "Token roles"). `joinTokens.create` mints `node` tokens. */
export const JOIN_TOKEN_ROLES = ['node', 'site', 'provisioned', 'discovery'] as const;
export type JoinTokenRole = (typeof JOIN_TOKEN_ROLES)[number];

const JOIN_TOKEN_STATES = ['live', 'revoked', 'expired', 'used-up'] as const;
export type JoinTokenState = (typeof JOIN_TOKEN_STATES)[number];

export const HOSTED_KINDS = ['kubernetes'] as const;

/** The bounds joining.md sets; issueJoinToken enforces them again for tokens minted by other modules. */
export const TOKEN_LIMITS = {
  ttlSeconds: { min: 60, max: 86_400 },
  maxUses: { min: 1, max: 10_000 },
  idempotencyKey: { max: 200 },
  list: { default: 100, max: 200 },
} as const;

export const ttlSeconds = z
  .number({ error: 'must be a whole number of seconds, 60 to 86400' })
  .int('must be a whole number of seconds, 60 to 86400')
  .min(TOKEN_LIMITS.ttlSeconds.min, 'must be at least 60 seconds (one minute)')
  .max(TOKEN_LIMITS.ttlSeconds.max, 'must be at most 86400 seconds (one day)');
export const maxUses = z
  .number({ error: 'must be a whole number, 1 to 10000' })
  .int('must be a whole number, 1 to 10000')
  .min(TOKEN_LIMITS.maxUses.min, 'must be at least 1')
  .max(TOKEN_LIMITS.maxUses.max, 'must be at most 10000');

/**
 * 1 to 200 characters, no control or format characters and no surrounding blanks: a key is typed in
 * scripts and shown in audit rows, so it must print as it was sent.
 */
export const idempotencyKey = z
  .string({ error: 'is required (1 to 200 printable characters)' })
  .min(1, 'must not be empty')
  .max(TOKEN_LIMITS.idempotencyKey.max, 'must be at most 200 characters')
  .regex(/^(?!\s)[^\p{C}]*(?<!\s)$/u, 'must be printable, without control characters or surrounding blanks');

/**
 * `expect` as sent. Only the shape is checked here; `normalizeExpect` (protocol/api/join-expect.ts)
 * decides the forms (mac `aa:bb:cc:dd:ee:ff`, gpuUuid `GPU-…`, at least one identifier) and normalizes them.
 */
const joinExpectInput = z
  .object({
    productUuid: z.string().max(64).nullish(),
    serial: z.string().max(256).nullish(),
    mac: z.string().max(64).nullish(),
    gpuUuid: z.string().max(128).nullish(),
  })
  .strict();

/** A token's optional label: printable, no surrounding blanks (it is shown in lists and audit rows). */
const label = (max: number) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .regex(/^(?!\s)[^\p{C}]*(?<!\s)$/u, 'must be printable, without control characters or surrounding blanks');
export const tokenName = label(100);
export const tokenDescription = label(500);

export const createJoinTokenInput = z.strictObject({
  tenantId: idOf('tnt'),
  poolId: idOf('pool'),
  /** What the token is for, as lists show it ("rack B7 intake"); not part of the idempotency comparison. */
  name: tokenName.nullish(),
  description: tokenDescription.nullish(),
  ttlSeconds,
  maxUses: maxUses.default(1),
  expect: joinExpectInput.nullish(),
  allowReclaim: z.boolean().default(false),
  hosted: z.enum(HOSTED_KINDS).nullish(),
  idempotencyKey,
  /** Labels the nodes it admits get (the lowest of a join's sources); never on the certificate. */
  labels: labelsSchema.optional(),
});

export const listJoinTokensInput = z.strictObject({
  tenantId: idOf('tnt'),
  poolId: idOf('pool'),
  includeInactive: z.boolean().optional(),
  limit: z
    .number()
    .int('must be a whole number, 1 to 200')
    .min(1, 'must be at least 1')
    .max(TOKEN_LIMITS.list.max, 'must be at most 200')
    .optional(),
  /** The `nextCursor` of the previous page. */
  cursor: idOf('jt').optional(),
  direction: pageDirection,
});

export const revokeJoinTokenInput = z.strictObject({ tenantId: idOf('tnt'), poolId: idOf('pool'), tokenId: idOf('jt') });

const joinExpectRecord = z
  .object({ productUuid: z.string().optional(), serial: z.string().optional(), mac: z.string().optional(), gpuUuid: z.string().optional() })
  .strict();

/**
 * A token as every answer shows it. Strict, so a record that ever carried another field (the secret's hash,
 * the idempotency key's owner) fails the output check instead of reaching a caller.
 */
export const joinTokenRecord = z
  .object({
    id: z.string(),
    poolId: z.string().nullable(),
    siteId: z.string(),
    role: z.enum(JOIN_TOKEN_ROLES),
    usesLeft: z.number().int(),
    maxUses: z.number().int(),
    expect: joinExpectRecord.nullable(),
    allowReclaim: z.boolean(),
    hosted: z.enum(HOSTED_KINDS).nullable(),
    expiresAt: z.string(),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
    /** Who revoked it (`operator:op_…`, `api-key:ak_…`), and the operator's email when an operator did. */
    revokedBy: z.string().nullable(),
    revokedByEmail: z.string().nullable(),
    name: z.string().nullable(),
    description: z.string().nullable(),
    /** Who created it, as audit rows name callers (`operator:op_…`, `api-key:ak_…`), and the operator's email when an operator did. */
    createdBy: z.string(),
    createdByEmail: z.string().nullable(),
    /** When a join last spent one of its uses; null while unused. */
    lastUsedAt: z.string().nullable(),
    state: z.enum(JOIN_TOKEN_STATES),
    /** Labels the nodes it admits get. */
    labels: z.record(z.string(), z.string()),
  })
  .strict();
export type JoinTokenRecord = z.infer<typeof joinTokenRecord>;

/** The create answer: the record, plus the bearer token only when this call minted it. */
export const createdJoinToken = joinTokenRecord.extend({ token: z.string().optional() }).strict();
export type CreatedJoinToken = z.infer<typeof createdJoinToken>;

export const joinTokenPage = z.object({ items: z.array(joinTokenRecord), nextCursor: z.string().nullable() }).strict();
export type JoinTokenPage = z.infer<typeof joinTokenPage>;

/**
 * Parses input with its schema at an edge that is not a procedure (issueJoinToken, which the bootstrap and
 * the CLI's local commands reach), refusing bad input with INVALID_ARGUMENT naming the field, as the API does.
 * A domain function behind a procedure takes the parsed value instead (docs/architecture.md).
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue?.path.join('.') || undefined;
  const message = issue?.message ?? 'is not valid';
  throw new DomainError('INVALID_ARGUMENT', field ? `${field}: ${message}` : message, { field });
}
