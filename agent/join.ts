import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { spkiPin } from '../protocol/pins';
import { IDENTITY_FILE, NODE_KEY_FILE, writeIdentity } from './identity-store';
import { loadJoinEncryptionKey } from './join-key';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from './keys';
import { sealTokenSync, type EncryptionJwk } from './seal-token';
import { verifyJoinAnswer, type IssuedAnswer, type PendingAnswer } from './verify-answer';
import { loggedFetch } from './request-log';

/** The pins an install embeds (`/etc/bcd/config.toml`). */
export interface AgentPins {
  joinSigningKeyPin: string;
  joinEncryptionKeyPin: string;
}

/** What the agent trusts for one server, resolved once: the sealing key and the answer-signing cert. */
export interface JoinTrust {
  encryptionJwk: EncryptionJwk;
  signingCertificateDer: Buffer;
  signingKeyPin: string;
}

export const DEFAULT_BASE_PATH = '/api/compute';

/**
 * Resolves the keys a join needs and checks each against its pin: the encryption key from
 * `join-encryption.jwk` when it matches (else the well-known document), and the join-signing certificate
 * from the well-known document, accepted only when its key matches `join_signing_key_pin`.
 */
export async function resolveJoinTrust(options: {
  serverUrl: string;
  basePath?: string;
  pins: AgentPins;
  jwkPath?: string;
  /** See LoadJoinEncryptionKeyOptions.refuseMismatchedFile (bcd sets it). */
  refuseMismatchedKeyFile?: boolean;
  fetch?: typeof fetch;
}): Promise<JoinTrust> {
  const doFetch = loggedFetch(options.fetch ?? fetch);
  const basePath = options.basePath ?? DEFAULT_BASE_PATH;
  const encryption = await loadJoinEncryptionKey({
    jwkPath: options.jwkPath,
    pin: options.pins.joinEncryptionKeyPin,
    serverUrl: options.serverUrl,
    basePath,
    fetch: doFetch,
    refuseMismatchedFile: options.refuseMismatchedKeyFile,
  });
  const response = await doFetch(`${options.serverUrl}${basePath}/.well-known/better-compute`);
  if (!response.ok) throw new Error(`The well-known document answered ${response.status}`);
  const doc = (await response.json()) as { join?: { signingCertificate?: string } };
  const certificate = doc.join?.signingCertificate;
  if (!certificate) throw new Error('The server publishes no join signing certificate (is pki.join configured?)');
  const der = Buffer.from(certificate, 'base64');
  const { X509Certificate } = await import('node:crypto');
  if (spkiPin(new X509Certificate(der).publicKey) !== options.pins.joinSigningKeyPin) {
    throw new Error('The join signing certificate of the well-known document does not match join_signing_key_pin');
  }
  return { encryptionJwk: encryption.jwk, signingCertificateDer: der, signingKeyPin: options.pins.joinSigningKeyPin };
}

export class JoinRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'JoinRefusedError';
  }
}

export interface JoinAttempt {
  keys: NodeKeyAndCsr;
  sealedToken: string;
  body: string;
}

/** Builds a join request: a new P-256 key and CSR (unless given), the token sealed to this CSR. */
export async function prepareJoinAttempt(options: {
  token: string;
  trust: JoinTrust;
  claims: HardwareClaims;
  role?: string;
  keys?: NodeKeyAndCsr;
  /** `''` (join-token) unless given; a PXE ramdisk joins as `discovery`. */
  attestor?: string;
}): Promise<JoinAttempt> {
  const keys = options.keys ?? generateNodeKeyAndCsr();
  const sealedToken = sealTokenSync(options.token, options.trust.encryptionJwk, keys.csrSha256);
  const body = JSON.stringify({
    sealedToken,
    csr: keys.csrDer.toString('base64'),
    claims: options.claims,
    attestor: options.attestor ?? '',
    role: options.role ?? 'node',
    attestation: {},
  });
  return { keys, sealedToken, body };
}

/**
 * Sends a prepared join and verifies the answer in the protocol's order before anything in it is used.
 * A refusal (403), a race (409) or a server without keys (503) is a JoinRefusedError.
 */
export async function sendJoin(options: {
  serverUrl: string;
  basePath?: string;
  attempt: JoinAttempt;
  trust: JoinTrust;
  role?: string;
  fetch?: typeof fetch;
}): Promise<IssuedAnswer | PendingAnswer> {
  const doFetch = loggedFetch(options.fetch ?? fetch);
  const response = await doFetch(`${options.serverUrl}${options.basePath ?? DEFAULT_BASE_PATH}/v1/join`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: options.attempt.body,
  });
  const text = await response.text();
  if (response.status !== 200) {
    let error: { code?: string; message?: string } = {};
    try {
      error = JSON.parse(text);
    } catch {
      // not JSON: reported by status below
    }
    throw new JoinRefusedError(response.status, error.code ?? 'UNKNOWN', error.message ?? `The server answered ${response.status}`);
  }
  const role = options.role ?? 'node';
  return verifyJoinAnswer(JSON.parse(text), {
    signingKeyPin: options.trust.signingKeyPin,
    signingCertificateDer: options.trust.signingCertificateDer,
    csrSha256: options.attempt.keys.csrSha256,
    publicKeySpkiDer: options.attempt.keys.spkiDer,
    expectedRole: role,
  });
}

/**
 * A whole join as `bcd join` performs it: resolve the pinned keys, make a key and CSR, seal, join, verify,
 * and only then write `node.key` (0600) and `identity.json` to `identityDir`.
 */
export async function joinWithToken(options: {
  serverUrl: string;
  basePath?: string;
  token: string;
  claims: HardwareClaims;
  pins: AgentPins;
  identityDir: string;
  jwkPath?: string;
  refuseMismatchedKeyFile?: boolean;
  reset?: boolean;
  fetch?: typeof fetch;
}): Promise<IssuedAnswer | PendingAnswer> {
  // A machine whose identity exists does nothing (bcd's "already joined"): joining first would spend the
  // token, and with allowReclaim revoke the working certificate, before the write is refused.
  if (!options.reset && (await hasIdentity(options.identityDir))) {
    throw new Error(`already joined: ${options.identityDir} holds an identity; join again with reset to replace it`);
  }
  const trust = await resolveJoinTrust(options);
  const attempt = await prepareJoinAttempt({ token: options.token.trim(), trust, claims: options.claims });
  const answer = await sendJoin({ ...options, attempt, trust });
  if (answer.status === 'joined') {
    await writeIdentity(
      options.identityDir,
      {
        privateKeyPem: attempt.keys.privateKeyPem,
        certificateChain: answer.certificateChain,
        nodeId: answer.nodeId,
        siteId: answer.siteId,
        trustDomain: answer.trustDomain,
        role: answer.role,
      },
      { reset: options.reset },
    );
  }
  return answer;
}

async function hasIdentity(dir: string): Promise<boolean> {
  const present = await Promise.all(
    [IDENTITY_FILE, NODE_KEY_FILE].map((name) =>
      stat(path.join(dir, name)).then(
        () => true,
        () => false,
      ),
    ),
  );
  return present.some(Boolean);
}
