import { z } from 'zod';
import { toErrorBody } from '../../error-map';
import { DomainError } from '../../../protocol/errors';
import { DEFAULT_MAX_BODY_BYTES, HttpRefusal, readRequestText, requireJsonContentType } from '../../http/body';
import { checkSessionOrigin } from '../../http/request-rules';
import { isClientAbort } from '../../http/client-abort';
import { logError, logLimited } from '../../log';
import { createCaller } from '../root';
import { toDomainError, type ApiContext } from '../trpc';
import { procedureInput } from './procedures';
import { matchRoute, successStatus } from './routes';

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } });

type PropertyTypes = Record<string, { type?: string }>;
const propertyTypesCache = new Map<string, PropertyTypes>();

/** The JSON types of a schema's fields (what `coerceQuery` reads). */
export function schemaPropertyTypes(schema: z.ZodType): PropertyTypes {
  return (z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: PropertyTypes }).properties ?? {};
}

/** The JSON types of a procedure's input fields, derived once per procedure rather than per request. */
function inputPropertyTypes(procedure: string): PropertyTypes {
  let properties = propertyTypesCache.get(procedure);
  if (!properties) {
    const schema = procedureInput(procedure);
    properties = schema ? schemaPropertyTypes(schema) : {};
    propertyTypesCache.set(procedure, properties);
  }
  return properties;
}

/**
 * Query strings carry text: turn `true`/`false` and digits into what the schema expects, and collect a repeated
 * parameter of an array field (`labels=rack=c7&labels=env=prod`) into its list.
 */
export function coerceQuery(query: URLSearchParams, properties: PropertyTypes): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of query) {
    const type = properties[key]?.type;
    if (type === 'array') out[key] = [...((out[key] as string[] | undefined) ?? []), value];
    else if (type === 'boolean') out[key] = value === 'true' ? true : value === 'false' ? false : value;
    else if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) out[key] = Number(value);
    else out[key] = value;
  }
  return out;
}

export function errorResponse(error: unknown): Response {
  const domain = toDomainError(error);
  if (!domain && isClientAbort(error)) logLimited('rest-client-abort', 'a client closed a REST request before sending its body');
  else if (!domain) logError('REST request failed', error);
  const { status, body } = toErrorBody(domain ?? error);
  return json(domain instanceof HttpRefusal ? domain.status : status, body);
}

/**
 * The JSON object a POST carries. The caller is authenticated before a byte of the body is read, and the
 * body is capped by the route's limit while it streams.
 */
async function readJsonObject(request: Request, ctx: ApiContext, maxBodyBytes: number): Promise<Record<string, unknown>> {
  const contentType = request.headers.get('content-type');
  // A console session's cookie rides along on any cross-site form post; a JSON content type cannot be
  // sent cross-site without a preflight, so a session must send one. An API key is not ambient: it may
  // POST an empty body (archive, revoke) without a content type, but any body it sends is JSON.
  const hasBody = Number(request.headers.get('content-length') ?? 0) > 0 || request.headers.has('transfer-encoding');
  const mustBeJson = ctx.principal?.kind === 'operator' || contentType !== null || hasBody;
  if (mustBeJson) requireJsonContentType(contentType, 'Send the body as application/json');
  const text = await readRequestText(request, maxBodyBytes);
  let parsed: unknown = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new DomainError('INVALID_ARGUMENT', 'The request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new DomainError(
      'INVALID_ARGUMENT',
      `The request body must be a JSON object, not ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : `a ${typeof parsed}`}`,
    );
  }
  return parsed as Record<string, unknown>;
}

/** Serves one REST request (`path` relative to the base path) through the tRPC procedure it maps to. */
export async function handleRestRequest(request: Request, path: string, ctx: ApiContext): Promise<Response> {
  const match = matchRoute(request.method, path);
  if (!match) return json(404, { code: 'NOT_FOUND', message: `No route ${request.method} ${path}` });
  if ('allowed' in match)
    return json(405, { code: 'INVALID_ARGUMENT', message: `Use ${match.allowed.join(' or ')}` }, { allow: match.allowed.join(', ') });
  try {
    // Nothing of an anonymous request is read: no principal, no body (an unauthenticated 200 MB POST
    // answers 401 at once instead of being buffered first).
    if (!ctx.principal) throw ctx.authError ?? new DomainError('UNAUTHENTICATED', 'Sign in, or send an API key as Authorization: Bearer');
    let input: Record<string, unknown>;
    if (request.method === 'GET') {
      input = coerceQuery(new URL(request.url).searchParams, inputPropertyTypes(match.route.procedure));
    } else {
      if (ctx.principal.kind === 'operator') {
        const refusal = checkSessionOrigin(request.headers);
        if (refusal) throw refusal;
      }
      input = await readJsonObject(request, ctx, match.route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    }
    // Path parameters win over body fields of the same name, so the URL decides the resource.
    Object.assign(input, match.params);
    // A procedure's path may be nested (`pki.rotation.status`): walk the caller one name at a time.
    let procedure: unknown = createCaller(ctx);
    for (const name of match.route.procedure.split('.')) procedure = (procedure as Record<string, unknown>)[name];
    const result = await (procedure as (input: unknown) => Promise<unknown>)(input);
    return json(successStatus(match.route), result);
  } catch (error) {
    return errorResponse(error);
  }
}
