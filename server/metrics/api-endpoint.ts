import type http from 'node:http';
import type pg from 'pg';
import type { Registry } from 'prom-client';
import type { ApiMetrics } from './api-metrics';
import { serveMetrics } from './endpoint';
import { registerSharedCollectors } from './shared-collectors';
import { SharedStateReader, readSharedState } from './shared-state';

/**
 * The API's registry: the process's counters (`metrics`), plus the shared gauges read through `pool`,
 * registered on the first call (the first scrape), so a process nobody scrapes never reads them.
 */
export function apiRegistry(metrics: ApiMetrics, pool: pg.Pool): () => Registry {
  let registered = false;
  return () => {
    if (!registered) {
      registered = true;
      const state = new SharedStateReader(() => readSharedState(pool));
      // The pool gauges describe the process's pool (joins, renewals and these reads share it) as it stands.
      registerSharedCollectors(metrics.registry, state, () => pool);
    }
    return metrics.registry;
  };
}

/** GET /metrics on the API's port (the boot server). */
export const serveApiMetrics = (req: http.IncomingMessage, res: http.ServerResponse, registry: () => Registry) =>
  serveMetrics(req, res, registry);
