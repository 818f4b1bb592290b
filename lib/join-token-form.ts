import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '@/server/api/root';
import { fieldMessage, type ApiError } from './api-errors';
import { parseLifetime } from './duration';

export type JoinToken = inferRouterOutputs<AppRouter>['joinTokens']['list']['items'][number];
export type JoinTokenState = JoinToken['state'];
export type CreateJoinTokenInput = inferRouterInputs<AppRouter>['joinTokens']['create'];
type ExpectInput = NonNullable<CreateJoinTokenInput['expect']>;
type ExpectKey = keyof ExpectInput & keyof NonNullable<JoinToken['expect']>;

/** The lifetimes offered in the form; anything else from 60 to 86,400 seconds is a custom TTL. */
export const TTL_PRESETS = [
  { seconds: 900, label: '15 minutes' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 14_400, label: '4 hours' },
  { seconds: 86_400, label: '24 hours' },
] as const;
export const CUSTOM_TTL = 'custom';

/**
 * The `expect` identifiers in the spec's order, with the forms joining.md gives them ("Binding a token to
 * one machine"); a Record keeps the list in step with the server's schema.
 */
export const EXPECT_FIELDS: Record<ExpectKey, { label: string; hint: string; placeholder: string }> = {
  serial: { label: 'Serial', hint: 'Product, board or chassis serial; case does not matter.', placeholder: 'SN-7701' },
  mac: {
    label: 'MAC',
    hint: 'aa:bb:cc:dd:ee:ff, a permanent, globally administered MAC of a physical NIC.',
    placeholder: 'aa:bb:cc:dd:ee:ff',
  },
  productUuid: {
    label: 'Product UUID',
    hint: 'The SMBIOS system UUID; placeholder UUIDs never match.',
    placeholder: '4c4c4544-0042-3510-…',
  },
  gpuUuid: { label: 'GPU UUID', hint: 'GPU- followed by a UUID, as nvidia-smi -L prints it.', placeholder: 'GPU-5f3c…' },
};
export const EXPECT_KEYS = Object.keys(EXPECT_FIELDS) as ExpectKey[];

export interface JoinTokenFormValues {
  /** A preset's seconds as text, or `custom`. */
  ttlChoice: string;
  /** The custom TTL as typed: `1h30m`, `90m` or seconds. */
  customTtl: string;
  maxUses: string;
  allowReclaim: boolean;
  isHosted: boolean;
  expect: Record<ExpectKey, string>;
  /** Optional label and notes, shown in the list. */
  name: string;
  description: string;
}

export const INITIAL_JOIN_TOKEN_VALUES: JoinTokenFormValues = {
  ttlChoice: '3600',
  customTtl: '',
  maxUses: '1',
  allowReclaim: false,
  isHosted: false,
  expect: { serial: '', mac: '', productUuid: '', gpuUuid: '' },
  name: '',
  description: '',
};

/** Text to number; blank becomes NaN, which the server refuses with the field's own message. */
const toNumber = (text: string) => (text.trim() === '' ? Number.NaN : Number(text));

/**
 * The joinTokens.create input for the form. Blank identifiers are left out, and `expect` with them when
 * all are blank, so "pin to nothing" is never sent as an empty binding (which the server refuses).
 */
export function toCreateJoinTokenInput(
  ids: { tenantId: string; poolId: string; idempotencyKey: string },
  values: JoinTokenFormValues,
): CreateJoinTokenInput {
  const expect: ExpectInput = {};
  for (const key of EXPECT_KEYS) {
    const value = values.expect[key].trim();
    if (value) expect[key] = value;
  }
  return {
    ...ids,
    ttlSeconds: values.ttlChoice === CUSTOM_TTL ? parseLifetime(values.customTtl) : toNumber(values.ttlChoice),
    maxUses: toNumber(values.maxUses),
    ...(Object.keys(expect).length ? { expect } : {}),
    allowReclaim: values.allowReclaim,
    ...(values.isHosted ? { hosted: 'kubernetes' as const } : {}),
    ...(values.name.trim() ? { name: values.name.trim() } : {}),
    ...(values.description.trim() ? { description: values.description.trim() } : {}),
  };
}

export type JoinTokenFormField =
  'ttlSeconds' | 'maxUses' | 'expect' | 'allowReclaim' | 'hosted' | 'name' | 'description' | `expect.${ExpectKey}`;

/** Which form field a server error is about (`expect.mac` → the MAC input); null for the form as a whole. */
export function joinTokenFieldOf(serverField: string | null): JoinTokenFormField | null {
  switch (serverField) {
    case 'ttlSeconds':
    case 'maxUses':
    case 'expect':
    case 'allowReclaim':
    case 'hosted':
    case 'name':
    case 'description':
      return serverField;
    case null:
      return null;
  }
  const key = /^expect\.(\w+)$/.exec(serverField ?? '')?.[1];
  return key && (EXPECT_KEYS as string[]).includes(key) ? (`expect.${key}` as JoinTokenFormField) : null;
}

function isForbidden(error: ApiError): boolean {
  return error.httpStatus === 403 || error.domainCode === 'ACCESS_DENIED';
}

/** A refusal for the operator's role, said in words; other errors keep the server's message. */
export function joinTokenErrorMessage(error: ApiError, action: 'create' | 'revoke', tenantName: string): string {
  if (!isForbidden(error)) return error.field ? fieldMessage(error) : error.message;
  const verb = action === 'create' ? 'create' : 'revoke';
  return `Your role in tenant ${tenantName} lets you see join tokens but not ${verb} them. Ask an admin or operator of the tenant.`;
}

/** `serial SN-7701` pairs of a token's binding, in the form's order; empty for an unpinned token. */
export function expectEntries(expect: JoinToken['expect']): { key: ExpectKey; label: string; value: string }[] {
  if (!expect) return [];
  return EXPECT_KEYS.flatMap((key) => (expect[key] ? [{ key, label: key, value: expect[key] }] : []));
}

/** `in 59 min`, `in 3 h 20 min`, `2 d ago`: how far `iso` is from `now`, to the minute. */
export function formatRelative(iso: string, now: number): string {
  const ms = new Date(iso).getTime() - now;
  if (Number.isNaN(ms)) return '';
  const minutes = Math.round(Math.abs(ms) / 60_000);
  let text: string;
  if (minutes < 1) text = 'less than a minute';
  else if (minutes < 60) text = `${minutes} min`;
  else if (minutes < 48 * 60) text = `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
  else text = `${Math.round(minutes / 1440)} d`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

/**
 * How long ago something happened. The page's clock ticks once a minute and the server's clock is not the
 * browser's, so a moment that reads as a little in the future is "just now", never "in less than a minute".
 */
export function formatAge(iso: string, now: number): string {
  const ms = now - new Date(iso).getTime();
  if (Number.isNaN(ms)) return '';
  return ms < 60_000 ? 'just now' : formatRelative(iso, now);
}

/**
 * A fresh idempotency key for one opening of the create dialog. `crypto.randomUUID` exists only in secure
 * contexts; a console reached over plain HTTP on a LAN address still has `getRandomValues`.
 */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return `console-${crypto.randomUUID()}`;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}
