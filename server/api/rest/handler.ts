import { z } from 'zod';
import { toErrorBody } from '../../error-map';
import { DomainError } from '../../errors';
import { logError } from '../../log';
import { createCaller } from '../root';
import { toDomainError, type ApiContext } from '../trpc';
import { procedureInput } from './procedures';
import { matchRoute, successStatus } from './routes';

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } });

type PropertyTypes = Record<string, { type?: string }>;
const propertyTypesCache = new Map<string, PropertyTypes>();

/** The JSON types of a procedure's input fields, derived once per procedure rather than per request. */
function inputPropertyTypes(procedure: string): PropertyTypes {
  let properties = propertyTypesCache.get(procedure);
  if (!properties) {
    const schema = procedureInput(procedure);
    properties = (schema ? (z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: PropertyTypes }).properties : undefined) ?? {};
    propertyTypesCache.set(procedure, properties);
  }
  return properties;
}

/** Query strings carry text: turn `true`/`false` and digits into what the schema expects. */
function coerceQuery(query: URLSearchParams, properties: PropertyTypes): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of query) {
    const type = properties[key]?.type;
    if (type === 'boolean') out[key] = value === 'true' ? true : value === 'false' ? false : value;
    else if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) out[key] = Number(value);
    else out[key] = value;
  }
  return out;
}

export function errorResponse(error: unknown): Response {
  const domain = toDomainError(error);
  if (!domain) logError('REST request failed', error);
  const { status, body } = toErrorBody(domain ?? error);
  return json(status, body);
}

/** Serves one REST request (`path` relative to the base path) through the tRPC procedure it maps to. */
export async function handleRestRequest(request: Request, path: string, ctx: ApiContext): Promise<Response> {
  const match = matchRoute(request.method, path);
  if (!match) return json(404, { code: 'NOT_FOUND', message: `No route ${request.method} ${path}` });
  if ('allowed' in match) return json(405, { code: 'INVALID_ARGUMENT', message: `Use ${match.allowed.join(' or ')}` }, { allow: match.allowed.join(', ') });
  try {
    let input: Record<string, unknown>;
    if (request.method === 'GET') {
      input = coerceQuery(new URL(request.url).searchParams, inputPropertyTypes(match.route.procedure));
    } else {
      // A console session's cookie rides along on any cross-site form post; a JSON content type cannot be
      // sent cross-site without a preflight, so a session must send one. API keys are not ambient.
      const isJson = /^application\/json\b/i.test(request.headers.get('content-type') ?? '');
      if (!isJson && !request.headers.get('authorization')) {
        throw new DomainError('INVALID_ARGUMENT', 'Send the body as application/json');
      }
      const text = await request.text();
      let parsed: unknown = {};
      try {
        parsed = text ? JSON.parse(text) : {};
      } catch {
        throw new DomainError('INVALID_ARGUMENT', 'The request body is not valid JSON');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new DomainError('INVALID_ARGUMENT', 'The request body must be a JSON object');
      }
      input = parsed as Record<string, unknown>;
    }
    // Path parameters win over body fields of the same name, so the URL decides the resource.
    Object.assign(input, match.params);
    const caller = createCaller(ctx) as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>;
    const [group, name] = match.route.procedure.split('.') as [string, string];
    const result = await caller[group]![name]!(input);
    return json(successStatus(match.route), result);
  } catch (error) {
    return errorResponse(error);
  }
}
