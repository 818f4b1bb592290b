import type { z } from 'zod';
import type { Db } from '../db/client';
import type { Principal } from '../authz/principal';
import type { Action } from '../../protocol/api/permissions';
import { requirePermission } from './trpc';

/**
 * Most procedures are one domain function behind the early role check: decided as `action`, their input and
 * output checked by the schemas, their answer the function's, called with the database, the caller and the
 * parsed input. The function decides the action again on the concrete resource (server/authz/authorize.ts).
 *
 * Each call site is type-checked: the function takes what `input` parses to and answers what `output`
 * accepts. Inside, tRPC's types of a generic schema do not reduce to zod's, hence the casts.
 */
type Call<In extends z.ZodType, Answer> = (db: Db, principal: Principal, input: z.output<In>) => Promise<Answer>;

/** The resolver that hands `call` the database, the caller and the parsed input. */
const resolveWith =
  <In extends z.ZodType>(call: Call<In, unknown>) =>
  ({ ctx, input }: { ctx: { db: Db; principal: Principal }; input: unknown }) =>
    call(ctx.db, ctx.principal, input as z.output<In>) as Promise<never>;

/** A query (GET in REST) answered by `call`. */
export function domainQuery<I extends z.ZodType, O extends z.ZodType>(action: Action, input: I, output: O, call: Call<I, z.input<O>>) {
  return requirePermission(action).input(input).output(output).query(resolveWith(call));
}

/** A mutation (POST in REST) answered by `call`. */
export function domainMutation<I extends z.ZodType, O extends z.ZodType>(action: Action, input: I, output: O, call: Call<I, z.input<O>>) {
  return requirePermission(action).input(input).output(output).mutation(resolveWith(call));
}

/** A query whose domain function answers an array: the procedure answers it as `{ items }`. */
export function domainList<I extends z.ZodType, O extends z.ZodType<unknown, { items: unknown[] }>>(
  action: Action,
  input: I,
  output: O,
  call: Call<I, z.input<O>['items']>,
) {
  return domainQuery(action, input, output, async (db, principal, input) => ({ items: await call(db, principal, input) }) as z.input<O>);
}
