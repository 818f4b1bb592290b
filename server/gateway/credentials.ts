import { constants, createPrivateKey, X509Certificate } from 'node:crypto';
import type tls from 'node:tls';
import type { GatewayVoucher } from '../vouching/vouch';
import { GATEWAY_CIPHERS } from './limits';

/** The gateway's credentials: what its directory holds (files.ts), and what a rotation replaces live. */
export interface GatewayCredentials {
  /**
   * PEM: the leaf, then the serving CA; while a serving CA rotation is active, the leaf, the serving CA certified
   * by the previous one, then the previous one.
   */
  servingChainPem: string;
  /** PEM PKCS#8 of the leaf's key. */
  servingKeyPem: string;
  /** PEM of every node CA that client certificates may chain to (two while the node CA rotates). */
  nodeCaPem: string;
}

function splitPem(pem: string): Buffer[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map((m) =>
    Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'),
  );
}

/**
 * The vouching credential: the serving key and the chain JoinService checks against the serving CA pin, the leaf
 * and the certificate after it (the serving CA, or its cross-certificate, which holds the same key).
 */
export function voucherFromServingChain(chainPem: string, keyPem: string): GatewayVoucher {
  const chain = splitPem(chainPem);
  if (chain.length < 2) throw new Error('The gateway chain must hold the leaf and then the serving CA');
  const key = createPrivateKey(keyPem);
  if (!new X509Certificate(chain[0]!).checkPrivateKey(key)) throw new Error('The gateway key does not match its certificate');
  return { key, chainB64: [chain[0]!.toString('base64'), chain[1]!.toString('base64')] };
}

/** The TLS context of the gateway's handshakes: its chain and key, the node CAs it asks for, its protocol bounds. */
export function secureContextOptions(credentials: GatewayCredentials): tls.SecureContextOptions {
  return {
    cert: credentials.servingChainPem,
    key: credentials.servingKeyPem,
    ca: credentials.nodeCaPem,
    minVersion: 'TLSv1.2',
    ciphers: GATEWAY_CIPHERS,
    // No session tickets: an agent never resumes (each renewal presents a new certificate, and a resumed
    // session would carry the identity of an earlier handshake), so minting them was wasted work, about a
    // sixth of the gateway's TLS cost per connection in bench:renew.
    secureOptions: constants.SSL_OP_NO_TICKET,
  };
}
