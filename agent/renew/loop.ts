import { connectGateway, type GatewayTarget } from './gateway-client';
import { loadNodeIdentity, replaceIdentity, type NodeLoadedIdentity } from './identity';
import { RenewRefusedError, renewOnce } from './renew';
import { backoffMs, renewalDelayMs, sleep } from './schedule';
import type { TrustStore } from '../trust/store';
import type { NodeKeyTpm } from '../tpm/node-key';
import { fetchWelcomeKeys } from '../session/welcome-key';
import type { NodeKeyHelper } from '../helper/client';

/** What the renewal loop and `agent doctor` need: the stored identity and the pinned gateway. */
export interface RenewalOptions {
  identityDir: string;
  gatewayUrl: string;
  servingCaPin: string;
  gatewayServerName?: string;
  basePath?: string;
  log?: (line: string) => void;
  /** What to tell the operator when the identity is revoked or expired (bcd names its own command). */
  joinAgain?: string;
  /** The TPM of a TPM-held node key (`--tpm` / `BCD_TPM`: a device or `swtpm:HOST:PORT`); /dev/tpmrm0 when absent. */
  tpm?: string;
  /** bcd's node-key TPM: a software identity's next key is made there when it opens (agent/tpm/node-key.ts). */
  nodeKeyTpm?: NodeKeyTpm;
  /** Under `[helper]`: `bcd helper`, which holds the TPM for a TPM-held node key (agent/helper). */
  helper?: NodeKeyHelper;
  /**
   * The trust set held (trust.json): gateway chains are checked under its serving CA pins, renewal answers
   * verified under its signing keys, and their `trust` stored in it.
   */
  trust?: TrustStore;
}

/** Exit codes of `agent run`. */
export const RENEWAL_EXIT = { stopped: 0, failed: 1, noIdentity: 2, refused: 3, expired: 4 } as const;

export const JOIN_AGAIN = 'join again: better-compute agent join --reset --yes';

/** Refusals in a row after which the identity is taken as revoked (a single one may be a stale clock). */
const REFUSALS_BEFORE_GIVING_UP = 3;
/** Attempts of a `once` run before it reports failure. */
const ONCE_ATTEMPTS = 5;

/**
 * Keeps the identity in `identityDir` fresh: sleeps until about 60% of the certificate's lifetime (jittered),
 * renews through the gateway (pinned serving CA, mutual TLS with the current certificate), verifies the new
 * certificate, installs it atomically (the previous identity is kept until then and as `.previous`), and
 * starts over. Failures retry with capped exponential backoff, never past the certificate's expiry.
 *
 * @returns an exit code: 0 when `signal` aborted or after a `once` renewal; 2 when no identity loads;
 *   3 when the gateway refused the identity repeatedly (revoked, or an older generation); 4 when it expired;
 *   1 when a `once` renewal kept failing. Each non-zero code is logged with what to do.
 */
export async function runRenewalLoop(options: RenewalOptions & { signal?: AbortSignal; once?: boolean }): Promise<number> {
  const log = options.log ?? ((line: string) => console.error(line));
  const target = { ...options } satisfies GatewayTarget & { basePath?: string };
  let refusals = 0;
  let failures = 0;
  for (;;) {
    if (options.signal?.aborted) return RENEWAL_EXIT.stopped;
    let current: NodeLoadedIdentity;
    try {
      current = await loadNodeIdentity(options.identityDir, { tpm: options.tpm, helper: options.helper });
    } catch (error) {
      log(`agent: no usable identity in ${options.identityDir} (${(error as Error).message}); join first: better-compute agent join`);
      return RENEWAL_EXIT.noIdentity;
    }
    if (Date.now() >= current.notAfter.getTime()) {
      log(`agent: the certificate expired at ${current.notAfter.toISOString()}; ${options.joinAgain ?? JOIN_AGAIN}`);
      return RENEWAL_EXIT.expired;
    }
    if (!options.once && failures === 0 && refusals === 0) {
      const wait = renewalDelayMs(current.notBefore, current.notAfter, Date.now());
      log(`agent: certificate valid until ${current.notAfter.toISOString()}; renewing in ${Math.round(wait / 1000)} s`);
      if (!(await sleep(wait, options.signal))) return RENEWAL_EXIT.stopped;
    }
    try {
      // The keys of the set's signing pins, so the answer is verified and its trust stored (best effort).
      if (options.trust?.lacksSigningKeys() && options.trust.set.joinSigningKeyPins.length)
        await fetchWelcomeKeys(target, options.trust).catch((error: Error) =>
          log(`agent: could not read the signing keys: ${error.message}`),
        );
      const renewed = await renewOnce(current, target);
      await replaceIdentity(options.identityDir, renewed);
      refusals = 0;
      failures = 0;
      log(`agent: renewed ${current.spiffeId}`);
      if (options.once) return RENEWAL_EXIT.stopped;
      continue;
    } catch (error) {
      if (error instanceof RenewRefusedError) {
        refusals += 1;
        if (refusals >= REFUSALS_BEFORE_GIVING_UP) {
          log(
            `agent: the control plane refused to renew ${current.spiffeId} ${refusals} times (revoked, or replaced by a newer identity); ${options.joinAgain ?? JOIN_AGAIN}`,
          );
          return RENEWAL_EXIT.refused;
        }
      } else {
        failures += 1;
      }
      log(`agent: renewal failed: ${(error as Error).message}`);
      if (options.once && refusals + failures >= ONCE_ATTEMPTS) return RENEWAL_EXIT.failed;
    }
    const untilExpiry = current.notAfter.getTime() - Date.now();
    const wait = Math.max(0, Math.min(backoffMs(refusals + failures - 1), untilExpiry));
    if (!(await sleep(wait, options.signal))) return RENEWAL_EXIT.stopped;
  }
}

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * `agent doctor`: the identity loads (key matches certificate), when it expires (fails when it has), and the
 * gateway answers and presents a chain under the pinned serving CA that names the expected server.
 */
export async function doctorChecks(options: RenewalOptions): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  let current: NodeLoadedIdentity | null = null;
  try {
    current = await loadNodeIdentity(options.identityDir, { tpm: options.tpm, helper: options.helper });
    checks.push({ name: 'identity', ok: true, detail: `${current.spiffeId} (role ${current.identity.role})` });
  } catch (error) {
    checks.push({ name: 'identity', ok: false, detail: `no usable identity in ${options.identityDir}: ${(error as Error).message}` });
  }
  if (current) {
    const left = current.notAfter.getTime() - Date.now();
    checks.push(
      left > 0
        ? { name: 'expiry', ok: true, detail: `expires at ${current.notAfter.toISOString()} (in ${Math.round(left / 60_000)} min)` }
        : {
            name: 'expiry',
            ok: false,
            detail: `the certificate expired at ${current.notAfter.toISOString()}; ${options.joinAgain ?? JOIN_AGAIN}`,
          },
    );
  }
  try {
    const socket = await connectGateway(options, undefined, 10_000);
    socket.destroy();
    checks.push({ name: 'gateway', ok: true, detail: `${options.gatewayUrl} answers and presents the pinned serving CA` });
  } catch (error) {
    checks.push({ name: 'gateway', ok: false, detail: `${options.gatewayUrl}: ${(error as Error).message}` });
  }
  return checks;
}
