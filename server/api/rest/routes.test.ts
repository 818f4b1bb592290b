import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { appRouter } from '../root';
import { procedureInput } from './procedures';
import { REST_ROUTES } from './routes';
import { restRoutes } from './route-table';

const T = '/v1/tenants/{tenantId}';
const revoke = `${T}/pools/{poolId}/join-tokens/{tokenId}/revoke` as const;

describe('the REST route table', () => {
  // `npm run typecheck` is this test's check: each @ts-expect-error must meet a compile error, or tsc fails.
  it('fails to compile with a route to no procedure, a method not the procedure’s, or a path parameter its input lacks', () => {
    const routes = [
      restRoutes([{ method: 'POST', path: revoke, procedure: 'joinTokens.revoke', summary: 'Revoke a join token' }]),
      restRoutes([
        // @ts-expect-error: there is no procedure joinTokens.revok
        { method: 'POST', path: revoke, procedure: 'joinTokens.revok', summary: 'a misspelt procedure' },
      ]),
      restRoutes([
        // @ts-expect-error: joinTokens.revoke is a mutation, served by POST
        { method: 'GET', path: revoke, procedure: 'joinTokens.revoke', summary: 'a query method for a mutation' },
      ]),
      restRoutes([
        // @ts-expect-error: a subscription has no REST route
        { method: 'GET', path: `${T}/events/live`, procedure: 'events.onChange', summary: 'a subscription' },
      ]),
      restRoutes([
        { method: 'GET', path: `${T}/pools/{poolId}/join-tokens`, procedure: 'joinTokens.list', summary: 'a good route first' },
        // @ts-expect-error: {tokenI} is not a field of joinTokens.revoke's input
        { method: 'POST', path: `${T}/pools/{poolId}/join-tokens/{tokenI}/revoke`, procedure: 'joinTokens.revoke', summary: 'a typo' },
      ]),
      restRoutes([
        // @ts-expect-error: {limit} is a number of joinTokens.list's input, and a path carries text
        { method: 'GET', path: `${T}/pools/{poolId}/join-tokens/{limit}`, procedure: 'joinTokens.list', summary: 'a number' },
      ]),
    ];
    // The table is data: restRoutes returns it as written.
    expect(routes.map((r) => r[0]!.procedure)).toEqual([
      'joinTokens.revoke',
      'joinTokens.revok',
      'joinTokens.revoke',
      'events.onChange',
      'joinTokens.list',
      'joinTokens.list',
    ]);
  });

  it('maps every route onto a query (GET) or mutation (POST) whose input has each path parameter', () => {
    const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { type: string } }>;
    for (const route of REST_ROUTES) {
      const procedure = procedures[route.procedure];
      expect(procedure?._def.type, route.procedure).toBe(route.method === 'GET' ? 'query' : 'mutation');
      const input = procedureInput(route.procedure);
      const properties = input
        ? Object.keys((z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as { properties?: object }).properties ?? {})
        : [];
      for (const [, name] of route.path.matchAll(/\{(\w+)\}/g)) expect(properties, `${route.path} {${name}}`).toContain(name);
    }
    expect(REST_ROUTES.length).toBeGreaterThan(50);
  });
});
