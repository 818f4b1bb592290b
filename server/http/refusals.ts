/**
 * Refusals in the error model for requests no route should see: an unsupported method or a path whose
 * percent-encoding does not decode. Small and dependency-free, so the boot server answers them itself.
 */
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } });

/** The methods anything under the base path answers; the rest get 405 in the error model. */
export const COMPUTE_METHODS = ['GET', 'HEAD', 'POST'] as const;

/** 405 in the error model, with the `Allow` header HTTP asks for. */
export const methodNotAllowed = (method: string, allowed: readonly string[]) =>
  json(
    405,
    { code: 'INVALID_ARGUMENT', message: `${method} is not supported here; use ${allowed.join(' or ')}` },
    { allow: allowed.join(', ') },
  );

/** 400 for a path whose percent-encoding does not decode (`/api/compute/%`), before any route sees it. */
export const malformedPath = () => json(400, { code: 'INVALID_ARGUMENT', message: 'The request path is not valid percent-encoding' });

/** True when every percent-escape of `path` decodes (to UTF-8). */
export function isWellEncodedPath(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
