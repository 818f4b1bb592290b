import type { AnyTRPCMutationProcedure, AnyTRPCProcedure, AnyTRPCQueryProcedure } from '@trpc/server';
import type { AppRouter } from '../root';

/**
 * The REST surface for automation: each route is an adapter over one tRPC procedure, so both APIs share
 * validation, authorization and the error model. Path parameters and the query (GET) or JSON body
 * (POST) are merged into the procedure's input.
 */
export interface RestRoute {
  method: 'GET' | 'POST';
  path: string;
  procedure: string;
  summary: string;
  /** The largest request body the route reads, in bytes; 1 MiB (DEFAULT_MAX_BODY_BYTES) when unset. */
  maxBodyBytes?: number;
}

type Procedures = AppRouter['_def']['record'];
/** Every procedure of a router record as its dotted path (`group.name`, or deeper: `pki.rotation.status`). */
type PathsOf<R, Prefix extends string = ''> = {
  [K in keyof R & string]: R[K] extends AnyTRPCProcedure ? `${Prefix}${K}` : PathsOf<R[K], `${Prefix}${K}.`>;
}[keyof R & string];
type ProcedurePath = PathsOf<Procedures>;
type ProcedureIn<R, P extends string> = P extends `${infer H}.${infer Rest}`
  ? H extends keyof R
    ? ProcedureIn<R[H], Rest>
    : never
  : P extends keyof R
    ? R[P]
    : never;
type ProcedureAt<P extends ProcedurePath> = ProcedureIn<Procedures, P>;
/** A query is read with GET, a mutation with POST; a subscription has no REST route. */
type MethodOf<P extends ProcedurePath> =
  ProcedureAt<P> extends AnyTRPCQueryProcedure ? 'GET' : ProcedureAt<P> extends AnyTRPCMutationProcedure ? 'POST' : never;
type InputOf<P extends ProcedurePath> = ProcedureAt<P>['_def']['$types']['input'];
/** The `{name}` parameters of a path. */
type PathParams<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}` ? Name | PathParams<Rest> : never;
/** The parameters that are not a field of the procedure's input taking text (the handler merges them in). */
type StrayParams<P extends ProcedurePath, Path extends string> = Exclude<
  PathParams<Path>,
  { [K in keyof InputOf<P> & string]: [Extract<InputOf<P>[K], string>] extends [never] ? never : K }[keyof InputOf<P> & string]
>;

/** A route as written: its procedure must exist, and its method be the procedure's. */
type RouteSpec = { [P in ProcedurePath]: Omit<RestRoute, 'method' | 'procedure'> & { method: MethodOf<P>; procedure: P } }[ProcedurePath];
/** Each route's path, or the message naming its parameters that its procedure's input lacks. */
type CheckedPaths<R extends readonly RouteSpec[]> = {
  [I in keyof R]: R[I] extends { procedure: infer P extends ProcedurePath; path: infer Path extends string }
    ? [StrayParams<P, Path>] extends [never]
      ? R[I]
      : R[I] & { error: `${Path}: {${StrayParams<P, Path>}} is not a text field of ${P}'s input` }
    : R[I];
};

/** The route table, checked by `tsc` against the router (routes.test.ts shows what fails to compile). */
export function restRoutes<const R extends readonly RouteSpec[]>(routes: R & CheckedPaths<R>): readonly RestRoute[] {
  return routes;
}

/** Every tenant route's prefix. */
export const T = '/v1/tenants/{tenantId}';
