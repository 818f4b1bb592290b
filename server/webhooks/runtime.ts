import type pg from 'pg';
import type { ApiMetrics } from '../metrics/api-metrics';
import { webhookSettingsFromEnv } from './config';
import { serverSecrets } from './secret';
import { WebhookWorker } from './worker';

/**
 * Starts this process's webhook delivery worker on the services' database, which server/boot hands in, with the
 * settings of the environment (every API instance runs one; see WebhookWorker). Returns its stop.
 */
export async function startWebhookWorker(
  services: { pg: pg.Pool; databaseUrl: string; metrics: ApiMetrics },
  env: Record<string, string | undefined> = process.env,
): Promise<() => Promise<void>> {
  const worker = new WebhookWorker({
    pool: services.pg,
    databaseUrl: services.databaseUrl,
    metrics: services.metrics,
    settings: webhookSettingsFromEnv(env),
    secrets: () => serverSecrets(env),
  });
  await worker.start();
  return () => worker.stop();
}
