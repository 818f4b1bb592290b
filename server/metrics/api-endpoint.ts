import type http from 'node:http';
import type pg from 'pg';
import { getPgPool } from '../db/pg';
import { apiMetrics } from './api-metrics';
import { serveMetrics } from './endpoint';
import { registerSharedCollectors } from './shared-collectors';
import { SharedStateReader, readSharedState } from './shared-state';

const globalForPg = globalThis as unknown as { betterComputePg?: pg.Pool };
let registered = false;

/** The API's registry: this process's counters, plus the shared gauges, registered on the first scrape. */
function apiRegistry() {
  const { registry } = apiMetrics();
  if (!registered) {
    registered = true;
    const state = new SharedStateReader(() => readSharedState(getPgPool()));
    // The pool gauges describe the process's pool (joins, renewals and these reads share it) as it stands.
    registerSharedCollectors(registry, state, () => globalForPg.betterComputePg);
  }
  return registry;
}

/** GET /metrics on the API's port (the boot server, and the test server that stands in for it). */
export const serveApiMetrics = (req: http.IncomingMessage, res: http.ServerResponse) => serveMetrics(req, res, apiRegistry);
