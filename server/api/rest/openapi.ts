import { z } from 'zod';
import { DOMAIN_ERROR_CODES } from '../../../protocol/errors';
import { procedureInput, procedureOutput } from './procedures';
import { REST_ROUTES, successStatus } from './routes';

const toSchema = (schema: z.ZodType | undefined, io: 'input' | 'output') =>
  schema ? (z.toJSONSchema(schema, { io, target: 'openapi-3.0', unrepresentable: 'any' }) as Record<string, unknown>) : { type: 'object' };

/** The OpenAPI 3 document of the REST API, generated from the same route table and zod schemas it serves. */
export function buildOpenApiDocument(basePath: string, version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of REST_ROUTES) {
    const input = toSchema(procedureInput(route.procedure), 'input') as { properties?: Record<string, unknown>; required?: string[] };
    const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const parameters: unknown[] = pathParams.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
    let requestBody: unknown;
    if (route.method === 'GET') {
      for (const [name, schema] of Object.entries(input.properties ?? {})) {
        if (pathParams.includes(name)) continue;
        parameters.push({ name, in: 'query', required: input.required?.includes(name) ?? false, schema });
      }
    } else {
      const properties = Object.fromEntries(Object.entries(input.properties ?? {}).filter(([k]) => !pathParams.includes(k)));
      const required = (input.required ?? []).filter((k) => !pathParams.includes(k));
      // OpenAPI 3.0 forbids an empty `required` list; a body with no required field may be omitted.
      const schema: Record<string, unknown> = { ...input, properties };
      if (required.length) schema.required = required;
      else delete schema.required;
      requestBody = { required: required.length > 0, content: { 'application/json': { schema } } };
    }
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = {
      operationId: route.procedure,
      summary: route.summary,
      parameters,
      ...(requestBody ? { requestBody } : {}),
      responses: {
        [successStatus(route)]: {
          description: 'OK',
          content: { 'application/json': { schema: toSchema(procedureOutput(route.procedure), 'output') } },
        },
        default: { description: 'An error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Better Compute API', version },
    servers: [{ url: basePath }],
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, bcak_…' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'string', enum: [...DOMAIN_ERROR_CODES, 'INTERNAL'] },
            message: { type: 'string' },
            field: { type: 'string' },
          },
        },
      },
    },
  };
}
