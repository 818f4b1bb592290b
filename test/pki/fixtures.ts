import { createPkiBundle, type PkiBundle } from '../../server/pki/bundle/bundle';
import { joinCryptoFromBundle, type JoinCrypto } from '../../server/pki/issuance/join-crypto';

let cached: { bundle: PkiBundle; joinCrypto: JoinCrypto } | undefined;

/** One PKI per test file, made at the real current time so `openssl verify` accepts what it signs. */
export function fixturePki(): { bundle: PkiBundle; joinCrypto: JoinCrypto } {
  if (!cached) {
    const bundle = createPkiBundle({ trustDomain: 'compute.example.com' });
    cached = { bundle, joinCrypto: joinCryptoFromBundle(bundle) };
  }
  return cached;
}

/** Runs `fn` and returns what it threw (fails the test when it does not throw). */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
