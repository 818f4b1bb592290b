import { getPgPool } from '../db/pg';
import { webhookSettingsFromEnv } from './config';
import { serverSecrets } from './secret';
import { WebhookWorker } from './worker';

/**
 * Starts this process's webhook delivery worker on DATABASE_URL with the settings of the environment (every
 * API instance runs one; see WebhookWorker). Returns its stop.
 */
export async function startWebhookWorker(env: Record<string, string | undefined> = process.env): Promise<() => Promise<void>> {
  const worker = new WebhookWorker({ pool: getPgPool(), databaseUrl: env.DATABASE_URL, settings: webhookSettingsFromEnv(env), secrets: () => serverSecrets(env) });
  await worker.start();
  return () => worker.stop();
}
