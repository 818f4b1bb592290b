import { DomainError } from '../../protocol/errors';
import { MAX_NODE_CERT_TTL_SECONDS } from '../pki/issuance/node-certificate';
import { secretWeakness } from '../pki/bundle/secret-strength';
import { joinThreadCount } from '../join/prepare-worker-pool';
import { gatewayLimitsFromEnv } from '../gateway/limits';
import { workerCount } from './workers';
import { releaseManifestOrigins } from '../daemon/manifest-fetch';
import { checkObservabilityConfig } from '../metrics/config';
import { parseTrustedProxies } from '../http/client-address';
import { liveStreamLimits } from '../api/live-streams';
import { requestLimitSettings } from '../http/request-limit-settings';
import { renewalsPerNodePerHour } from '../renew/renew-limit';
import { operatorEmail } from '../operators/email';
import { oidcConfigFromEnv, passwordSignInForEveryone } from '../auth/oidc-config';
import { smtpConfigFromEnv } from '../mail/smtp-config';
import { newRequestLimitsFromEnv } from '../config/join-request-limits';

/**
 * Checks the settings read later on hot paths (the certificate lifetime, the gateway URL, the worker
 * count), so a mistake stops the start with one clear line instead of failing every join or request.
 */
export function checkStartupConfig(env: Record<string, string | undefined> = process.env): void {
  const ttl = env.BETTER_COMPUTE_CERT_TTL_SECONDS;
  if (ttl !== undefined && ttl !== '') {
    const n = Number(ttl);
    if (!Number.isInteger(n) || n < 60 || n > MAX_NODE_CERT_TTL_SECONDS) {
      throw new DomainError(
        'INVALID_CONFIG',
        `BETTER_COMPUTE_CERT_TTL_SECONDS must be a whole number from 60 to ${MAX_NODE_CERT_TTL_SECONDS}, not ${ttl}`,
      );
    }
  }
  const gateway = env.BETTER_COMPUTE_GATEWAY_URL;
  if (gateway) {
    let url: URL | undefined;
    try {
      url = new URL(gateway);
    } catch {
      url = undefined;
    }
    if (!url || url.protocol !== 'https:') {
      throw new DomainError('INVALID_CONFIG', `BETTER_COMPUTE_GATEWAY_URL must be an https:// URL, not ${gateway}`);
    }
  }
  const secret = env.BETTER_COMPUTE_SECRET;
  if (secret !== undefined && secret !== '') checkSecret(secret, 'BETTER_COMPUTE_SECRET');
  workerCount(env);
  joinThreadCount(env);
  try {
    newRequestLimitsFromEnv(env);
  } catch (error) {
    throw new DomainError('INVALID_CONFIG', (error as Error).message);
  }
  // The gateway child reads these itself; checked here too, so a bad value stops `npm start` rather than a
  // gateway that exits and restarts every second.
  try {
    gatewayLimitsFromEnv(env);
  } catch (error) {
    throw new DomainError('INVALID_CONFIG', (error as Error).message);
  }
  releaseManifestOrigins(env);
  checkObservabilityConfig(env);
  parseTrustedProxies(env.BETTER_COMPUTE_TRUSTED_PROXIES);
  liveStreamLimits(env);
  requestLimitSettings(env);
  renewalsPerNodePerHour(env);
  const firstAdmin = env.BETTER_COMPUTE_FIRST_ADMIN_EMAIL;
  if (firstAdmin !== undefined && firstAdmin !== '' && !operatorEmail.safeParse(firstAdmin).success) {
    throw new DomainError('INVALID_CONFIG', `BETTER_COMPUTE_FIRST_ADMIN_EMAIL must be an email address, not ${firstAdmin}`);
  }
  oidcConfigFromEnv(env);
  passwordSignInForEveryone(env);
  smtpConfigFromEnv(env);
}

/**
 * Refuses a secret too weak to seal the PKI under (`secretWeakness`), naming where it came from. An install
 * sealed under an older, shorter secret moves to a new one by starting once with the old one in
 * BETTER_COMPUTE_PREVIOUS_SECRET: the start re-seals the bundle under the new secret.
 */
export function checkSecret(secret: string, source: string): void {
  const weakness = secretWeakness(secret);
  if (!weakness) return;
  throw new DomainError(
    'INVALID_CONFIG',
    `${source} ${weakness}. A PKI sealed under the old secret is re-sealed under the new one on a start with the old one in BETTER_COMPUTE_PREVIOUS_SECRET`,
  );
}
