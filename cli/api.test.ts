import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appRouter } from '../server/api/root';
import { procedureOutput } from '../server/api/rest/procedures';
import { REST_ROUTES } from '../server/api/rest/routes';
import { parseImports, sourceFiles } from '../test/layering';
import { API, SUBSCRIPTIONS, pathFits, type Procedure } from './api';
import { MalformedAnswerError, parseAnswer } from './answer';
import type { ApiClient } from './client';

const ROOT = path.resolve(__dirname, '..');
const procedures = Object.keys(API) as Procedure[];

describe("the CLI's API calls (cli/api.ts)", () => {
  it.each(procedures)('%s: the REST route the server declares, parsed with the output schema its procedure declares', (procedure) => {
    const { method, path: template, output } = API[procedure];
    const route = REST_ROUTES.find((r) => r.procedure === procedure);
    expect(route, `${procedure} has no REST route`).toBeDefined();
    expect({ method, path: template }).toEqual({ method: route!.method, path: route!.path });
    // The very schema object of the procedure's `.output()`, not a copy that could drift from it.
    const declared = procedureOutput(procedure);
    expect(declared, `${procedure} declares no output schema`).toBeDefined();
    expect(output).toBe(declared);
  });

  it('follows only subscriptions the server has, with the schema of the events they yield', () => {
    const defs = appRouter._def.procedures as unknown as Record<string, { _def: { type: string } } | undefined>;
    for (const name of Object.keys(SUBSCRIPTIONS)) expect(defs[name]?._def.type, name).toBe('subscription');
  });

  const cliSources = sourceFiles(ROOT).filter((file) => file.startsWith('cli/') && !/\.test\.ts$/.test(file));

  it('calls every procedure of the table somewhere, so the table is what the commands use', () => {
    const text = cliSources.filter((f) => f !== 'cli/api.ts').map((f) => readFileSync(path.join(ROOT, f), 'utf8'));
    const unused = [...procedures, ...Object.keys(SUBSCRIPTIONS)].filter((p) => !text.some((t) => t.includes(`'${p}'`)));
    expect(unused).toEqual([]);
  });

  it('talks HTTP only through ApiClient, whose every call names a procedure of the table', () => {
    // The well-known document (`dev --sim`) is the agent protocol's, which no procedure serves; the
    // simulated machines read it as an agent would.
    const allowed = new Set(['cli/client.ts', 'cli/commands/dev.ts']);
    const callers = cliSources.filter((file) =>
      /\bfetch\s*\(|node:https?'|from 'undici'/.test(readFileSync(path.join(ROOT, file), 'utf8')),
    );
    expect(callers.filter((file) => !allowed.has(file))).toEqual([]);
    const dev = readFileSync(path.join(ROOT, 'cli/commands/dev.ts'), 'utf8');
    expect(dev.match(/\bfetch\s*\(`[^`]*`/g)?.every((call) => call.includes('/.well-known/better-compute'))).toBe(true);
  });

  it('takes its answer schemas from modules that reach nothing but zod (no server code, no database)', () => {
    const reached = new Set<string>(['cli/api.ts']);
    const packages = new Set<string>();
    const queue = ['cli/api.ts'];
    while (queue.length) {
      for (const edge of parseImports(ROOT, queue.shift()!).edges) {
        if (edge.typeOnly) continue;
        if (!edge.specifier.startsWith('.') && !edge.specifier.startsWith('@/')) packages.add(edge.specifier);
        else if (!reached.has(edge.target)) {
          reached.add(edge.target);
          queue.push(edge.target);
        }
      }
    }
    expect([...packages]).toEqual(['zod']);
    const outsideProtocol = [...reached].filter((file) => !file.startsWith('protocol/') && file !== 'cli/api.ts');
    // server/rules/schemas.ts is a schema module of its own (zod and protocol/ only), shared with the server.
    expect(outsideProtocol).toEqual(['server/rules/schemas.ts']);
  });

  it('lets no call skip the table: a procedure name is required, and the method must be its route', () => {
    // Never run: the compiler (npm run typecheck) fails if a line below would compile.
    const compileOnly = (client: ApiClient) => {
      // @ts-expect-error a path alone names no procedure, so no output schema
      void client.get('/v1/tenants');
      // @ts-expect-error not a procedure of cli/api.ts
      void client.post('tenants.delete', '/v1/tenants/x/delete');
      // @ts-expect-error nodes.adopt is a POST route
      void client.get('nodes.adopt', '/v1/tenants/t/nodes/n/adopt');
      // @ts-expect-error no type argument stands in for the schema
      void client.get<{ items: string[] }>('tenants.list', '/v1/tenants');
    };
    expect(typeof compileOnly).toBe('function');
  });
});

describe('pathFits', () => {
  it('matches a path of the template, one segment per parameter', () => {
    expect(pathFits('/v1/tenants/{tenantId}/pools/{poolId}', '/v1/tenants/tnt_1/pools/pool_2')).toBe(true);
    expect(pathFits('/v1/tenants/{tenantId}/pools/{poolId}', '/v1/tenants/tnt_1/pools/pool_2/archive')).toBe(false);
    expect(pathFits('/v1/tenants/{tenantId}/pools/{poolId}', '/v1/tenants/tnt_1/sites/site_2')).toBe(false);
    expect(pathFits('/v1/tenants/{tenantId}/pools', '/v1/tenants/a/b/pools')).toBe(false);
    expect(pathFits('/v1/tenants', '/v1/tenants')).toBe(true);
  });
});

describe('parseAnswer', () => {
  const schema = z.object({ items: z.array(z.object({ id: z.string(), count: z.number().int() })), next: z.string().nullable() }).strict();

  it('answers the parsed value of a well-formed answer', () => {
    expect(parseAnswer('x list', 'x.list', schema, { items: [{ id: 'a', count: 1 }], next: null })).toEqual({
      items: [{ id: 'a', count: 1 }],
      next: null,
    });
  });

  it('names the command, the procedure and each wrong field, never a value of the answer', () => {
    const secret = 'bcak_ak_01hx.SECRET-VALUE-NEVER-PRINTED';
    let error: unknown;
    try {
      parseAnswer('x list', 'x.list', schema, { items: [{ id: 5, count: secret }], next: 42, hash: secret });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(MalformedAnswerError);
    const { message, fields } = error as MalformedAnswerError;
    expect(fields).toEqual(expect.arrayContaining(['items[0].id', 'items[0].count', 'next', 'the answer']));
    expect(message).toMatch(/^x list: the server's answer to x\.list does not have the shape this CLI expects \(/);
    expect(message).toContain('items[0].id: Invalid input: expected string, received number');
    expect(message).toContain('; and 1 more');
    expect(message).not.toContain('SECRET');
  });

  it('names the answer itself when there is none', () => {
    expect(() => parseAnswer('x get', 'x.get', schema, undefined)).toThrow(
      /x get: .*\(the answer: Invalid input: expected object, received undefined\)/,
    );
  });
});
