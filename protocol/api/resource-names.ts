import { z } from 'zod';

/** Names of tenants, sites and pools: lower-case DNS-label style, so they read well in CLIs and URLs. */
export const resourceName = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'use 1 to 63 lower-case letters, digits and inner dashes');

/** Sent by tRPC's infinite queries with every page request; lists here only page forward. */
export const pageDirection = z.enum(['forward', 'backward']).optional();

export const idOf = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-z]{1,40}$`), `expected a ${prefix}_… id`);
