import type { KeyObject } from 'node:crypto';
import { spkiPin } from '../../protocol/pins';
import type { GatewayTarget } from '../renew/gateway-client';
import { TrustStore } from '../trust/store';
import { fetchWelcomeKeys } from './welcome-key';

/** What of the session loop's options the trust set is made from. */
interface SessionTrustOptions extends GatewayTarget {
  basePath?: string;
  trust?: TrustStore;
  signingKey?: KeyObject;
  joinSigningKeyPin?: string;
}

/**
 * The trust set a session loop runs with (protocol.md "Trust rotation"): `options.trust`, or an in-memory one of
 * `servingCaPin` and the signing pin (`joinSigningKeyPin`, or `signingKey`'s) at version 0. Returns it, the
 * gateway target every connection uses (checked under the set's serving CA pins), `refreshKeys` (reads the
 * keys of the set's signing pins from the well-known document), `onTrust` (applies a `trust` event) and
 * `trustApplied` (settles when the `trust` events received so far are handled).
 */
export async function sessionTrust<T extends SessionTrustOptions>(options: T, log: (line: string) => void, nodeId: () => string) {
  const trust =
    options.trust ??
    (await TrustStore.open({
      dir: null,
      install: {
        servingCaPin: options.servingCaPin,
        joinSigningKeyPin: options.joinSigningKeyPin ?? (options.signingKey ? spkiPin(options.signingKey) : undefined),
      },
      log,
    }));
  if (options.signingKey) trust.learnSigningKey(options.signingKey);
  // Every connection (sessions, renewals, the well-known document) checks the gateway under the set's pins.
  const target: T & { trust: TrustStore } = { ...options, trust };
  // The keys of the set's signing pins come from the well-known document: read on the first Hello (a failure
  // is retried as a connection failure is), and again once after each set that names a pin whose key is not
  // known yet, so an envelope signed only by a new key verifies before the old key is dropped.
  let keysReadAt = -1;
  let reading: Promise<void> | null = null;
  const readKeys = async () => {
    const version = trust.version;
    try {
      await fetchWelcomeKeys(target, trust);
      keysReadAt = version;
    } catch (error) {
      // Not marked as read: the next Hello or trust event tries again.
      if (trust.signingKeys().size === 0) throw error;
      log(`agent: could not read the signing keys of trust set version ${version}: ${(error as Error).message}`);
    }
  };
  const refreshKeys = (): Promise<void> => {
    if (!trust.lacksSigningKeys() || keysReadAt === trust.version) return Promise.resolve();
    reading ??= readKeys().finally(() => (reading = null));
    return reading;
  };
  // Trust events are handled one after the other, each with the keys the previous one led to: a set that drops
  // the old signing key, signed by the new key only, may follow at once the set that introduced the new key.
  let events: Promise<void> = Promise.resolve();
  const onTrust = (data: unknown) =>
    (events = events.then(async () => {
      // A trusted pin whose key is not known yet may be the one that signed: its key is read first.
      await refreshKeys().catch(() => {});
      if (await trust.acceptEvent(data, nodeId())) await refreshKeys().catch(() => {});
    }));
  // Settles once every trust event received so far was handled: a command right after a set is checked under it.
  const trustApplied = () => events.catch(() => {});
  return { trust, target, refreshKeys, onTrust, trustApplied };
}
