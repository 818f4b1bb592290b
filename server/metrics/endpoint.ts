import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { Registry } from 'prom-client';

/** Where Prometheus scrapes: the API's port and the gateway's. */
export const METRICS_PATH = '/metrics';

type MetricsAccess = 'disabled' | 'allowed' | 'denied';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Who may scrape: nobody when BETTER_COMPUTE_METRICS_TOKEN is unset (the endpoint does not exist), else the
 * bearer of exactly that token. Both sides are hashed first, so the comparison is constant-time whatever
 * the lengths.
 */
function metricsAccess(authorization: string | undefined, configured = process.env.BETTER_COMPUTE_METRICS_TOKEN): MetricsAccess {
  if (!configured) return 'disabled';
  const match = /^Bearer ([^\s]+)$/i.exec(authorization ?? '');
  const presented = match?.[1] ?? '';
  return timingSafeEqual(digest(presented), digest(configured)) && match ? 'allowed' : 'denied';
}

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
const answerJson = (res: http.ServerResponse, status: number, body: object, extra: Record<string, string> = {}) => {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...HEADERS, ...extra, 'content-length': bytes.length }).end(bytes);
};

/**
 * GET /metrics in the Prometheus text format (0.0.4), for the node:http servers (the API's boot server and
 * the gateway). Refusals are in the error model: 404 when no token is configured, 401 without the token.
 */
export async function serveMetrics(req: http.IncomingMessage, res: http.ServerResponse, registry: () => Registry): Promise<void> {
  const access = metricsAccess(typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined);
  if (access === 'disabled') return answerJson(res, 404, { code: 'NOT_FOUND', message: 'Not found' });
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return answerJson(res, 405, { code: 'INVALID_ARGUMENT', message: 'Use GET' }, { allow: 'GET, HEAD' });
  if (access === 'denied') {
    return answerJson(
      res,
      401,
      { code: 'ACCESS_DENIED', message: 'Send Authorization: Bearer <BETTER_COMPUTE_METRICS_TOKEN>' },
      { 'www-authenticate': 'Bearer realm="metrics"' },
    );
  }
  try {
    const reg = registry();
    const bytes = Buffer.from(await reg.metrics());
    res.writeHead(200, { 'content-type': reg.contentType, 'cache-control': 'no-store', 'content-length': bytes.length });
    res.end(req.method === 'HEAD' ? undefined : bytes);
  } catch {
    // The database could not answer the shared gauges: a 503, so the scrape fails visibly instead of lying.
    answerJson(res, 503, { code: 'INVALID_STATE', message: 'Metrics are unavailable; retry' }, { 'retry-after': '5' });
  }
}
