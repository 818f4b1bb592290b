import type { Services } from '../boot/services';
import { webhookSettingsFromEnv } from './config';
import { serverSecrets } from './secret';
import { WebhookWorker } from './worker';

/**
 * Starts this process's webhook delivery worker on the services' database with the settings of the environment (every
 * API instance runs one; see WebhookWorker). Returns its stop.
 */
export async function startWebhookWorker(
  services: Pick<Services, 'pg' | 'databaseUrl' | 'metrics'>,
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
