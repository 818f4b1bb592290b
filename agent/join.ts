import { agentErrorClass } from './errors';
import { readFile, stat } from 'node:fs/promises';
import { X509Certificate, type KeyObject } from 'node:crypto';
import path from 'node:path';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { spkiPin } from '../protocol/pins';
import { IDENTITY_FILE, NODE_KEY_FILE, writeIdentity } from './identity-store';
import { loadJoinEncryptionKey } from './join-key';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from './keys';
import { sealTokenSync, type EncryptionJwk } from './seal-token';
import { verifyJoinAnswer, type IssuedAnswer, type PendingAnswer } from './verify-answer';
import { loggedFetch } from './request-log';
import { TrustStore } from './trust/store';
import { learnFromWellKnown } from './trust/well-known';
import { pinOfEncryptionJwk } from './trust/trust-set';
import { JoinRefusedError } from './join-refused';

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
  /** Every trusted join-signing key known, by pin (the trust set's); answers verify under any of them. */
  signingKeys?: ReadonlyMap<string, KeyObject>;
}

export const DEFAULT_BASE_PATH = '/api/compute';

/**
 * Resolves the keys a join needs and checks each against the pins trusted: the install's (`pins`), or the trust
 * set held in `trust` (trust.json) once one arrived. The join-signing certificates come from the well-known
 * document (`join.signingCertificate`, and during a rotation `join.next.signingCertificate`), each kept only when
 * its key matches a trusted pin. The encryption key is, before any set arrived, `join-encryption.jwk` when it
 * matches (else the well-known document, `join.next` included); with a set held, the first key of the set's
 * JWKs (the file's and the document's learned too) whose pin is in the set.
 */
export async function resolveJoinTrust(options: {
  serverUrl: string;
  basePath?: string;
  pins: AgentPins;
  jwkPath?: string;
  /** See LoadJoinEncryptionKeyOptions.refuseMismatchedFile (bcd sets it). */
  refuseMismatchedKeyFile?: boolean;
  fetch?: typeof fetch;
  /** The trust set held; an in-memory one of `pins` when absent. */
  trust?: TrustStore;
}): Promise<JoinTrust> {
  const doFetch = loggedFetch(options.fetch ?? fetch);
  const basePath = options.basePath ?? DEFAULT_BASE_PATH;
  const store =
    options.trust ??
    (await TrustStore.open({
      dir: null,
      install: { joinSigningKeyPin: options.pins.joinSigningKeyPin, joinEncryptionKeyPin: options.pins.joinEncryptionKeyPin },
    }));
  const response = await doFetch(`${options.serverUrl}${basePath}/.well-known/better-compute`);
  if (!response.ok) throw new Error(`The well-known document answered ${response.status}`);
  const doc = (await response.json()) as { join?: { signingCertificate?: string } };
  if (!doc.join?.signingCertificate) throw new Error('The server publishes no join signing certificate (is pki.join configured?)');
  learnFromWellKnown(store, doc);
  const keys = store.signingKeys();
  if (keys.size === 0) throw new Error('The join signing certificate of the well-known document does not match join_signing_key_pin');
  // The pin and certificate of one trusted key the document publishes, for callers that want a single key.
  const published = [...keys].map(([pin, key]) => ({ pin, der: signingCertificateOf(doc, key) }));
  const { pin: first, der: signingCertificateDer } = published.find((k) => k.der.length > 0) ?? published[0]!;

  let encryptionJwk: EncryptionJwk | null = null;
  if (store.version === 0) {
    try {
      const pinned = await loadJoinEncryptionKey({
        jwkPath: options.jwkPath,
        pin: options.pins.joinEncryptionKeyPin,
        // The document already read: the key file's fallback looks at it, not at a second fetch.
        serverUrl: options.serverUrl,
        basePath,
        fetch: (async () => new Response(JSON.stringify(doc), { status: 200 })) as typeof fetch,
        refuseMismatchedFile: options.refuseMismatchedKeyFile,
      });
      encryptionJwk = pinned.jwk;
    } catch (error) {
      // A pinned key published only as `join.next` (an encryption rotation under way) is as good; a key file
      // that is present but does not match still fails under bcd's rule.
      const fileThere = options.jwkPath
        ? await stat(options.jwkPath).then(
            () => true,
            () => false,
          )
        : false;
      encryptionJwk = options.refuseMismatchedKeyFile && fileThere ? null : store.sealingJwk();
      if (!encryptionJwk) throw error;
    }
  } else {
    // bcd's rule holds with a set too: a key file that is present but matches neither the install's pin nor a
    // pin of the set was not written by an install of this deployment, and fails the join.
    if (options.refuseMismatchedKeyFile && options.jwkPath) await refuseForeignKeyFile(options.jwkPath, options.pins, store);
    if (options.jwkPath)
      store.learnEncryptionJwk(
        await readFile(options.jwkPath, 'utf8')
          .then(JSON.parse, () => null)
          .catch(() => null),
      );
    encryptionJwk = store.sealingJwk();
    if (!encryptionJwk) throw new Error(`No join encryption key matches a join encryption pin of the trust set (version ${store.version})`);
  }
  return { encryptionJwk, signingCertificateDer, signingKeyPin: first, signingKeys: keys };
}

/**
 * Throws bcd's mismatch error when `jwkPath` exists and its key is neither the install's pinned key nor one the
 * held trust set lists; a missing file is fine (the set's keys are used).
 */
async function refuseForeignKeyFile(jwkPath: string, pins: AgentPins, store: TrustStore): Promise<void> {
  const text = await readFile(jwkPath, 'utf8').catch(() => null);
  if (text === null) return;
  let pin: string | undefined;
  try {
    pin = pinOfEncryptionJwk(JSON.parse(text))?.pin;
  } catch {
    pin = undefined;
  }
  if (pin && (pin === pins.joinEncryptionKeyPin || store.set.joinEncryptionKeyPins.includes(pin))) return;
  throw new Error(
    `${jwkPath} does not match join_encryption_key_pin; after a join key rotation, generate the install script again and rerun it (it rewrites the key file and the pins)`,
  );
}

/** The DER of the document's certificate whose key is `key` (join or join.next). */
function signingCertificateOf(
  doc: { join?: { signingCertificate?: string; next?: { signingCertificate?: string } } },
  key: KeyObject,
): Buffer {
  const pin = spkiPin(key);
  for (const b64 of [doc.join?.signingCertificate, doc.join?.next?.signingCertificate]) {
    if (typeof b64 !== 'string') continue;
    const der = Buffer.from(b64, 'base64');
    try {
      if (spkiPin(new X509Certificate(der).publicKey) === pin) return der;
    } catch {
      // not a certificate: learnFromWellKnown skipped it too
    }
  }
  return Buffer.alloc(0);
}

/**
 * What a join needs of its node key: the CSR, the key's SPKI and `node.key`'s text (a PKCS#8 PEM, or for a key
 * the TPM made its `bcd-tpm-key v1` blob, agent/tpm/node-key.ts).
 */
export type JoinKeys = Pick<NodeKeyAndCsr, 'csrDer' | 'csrSha256' | 'spkiDer' | 'privateKeyPem'>;

export interface JoinAttempt<K extends JoinKeys = NodeKeyAndCsr> {
  keys: K;
  sealedToken: string;
  body: string;
}

/** Builds a join request: a new P-256 key and CSR (unless given), the token sealed to this CSR. */
export async function prepareJoinAttempt<K extends JoinKeys = NodeKeyAndCsr>(options: {
  token: string;
  trust: JoinTrust;
  claims: HardwareClaims;
  role?: string;
  keys?: K;
  /** `''` (join-token) unless given; a PXE ramdisk joins as `discovery`. */
  attestor?: string;
}): Promise<JoinAttempt<K>> {
  const keys = options.keys ?? (generateNodeKeyAndCsr() as JoinKeys as K);
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
 * A refusal (403), a race (409) or a server without keys (503) is a JoinRefusedError (agent/join-refused.ts).
 */
export async function sendJoin(options: {
  serverUrl: string;
  basePath?: string;
  attempt: JoinAttempt<JoinKeys>;
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
  if (response.status !== 200) throw JoinRefusedError.of(response.status, text);
  const role = options.role ?? 'node';
  return verifyJoinAnswer(JSON.parse(text), {
    signingKeyPin: options.trust.signingKeyPin,
    signingCertificateDer: options.trust.signingCertificateDer,
    ...(options.trust.signingKeys ? { signingKeys: options.trust.signingKeys } : {}),
    csrSha256: options.attempt.keys.csrSha256,
    publicKeySpkiDer: options.attempt.keys.spkiDer,
    expectedRole: role,
  });
}

/**
 * A whole join as `bcd join` performs it: resolve the pinned keys, make a key and CSR, seal, join, verify,
 * and only then write `node.key` (0600) and `identity.json` to `identityDir`. `nodeKey` makes the key when
 * given (bcd's: in the TPM when one opens, agent/tpm/node-key.ts), before anything is sent; it answers null
 * for a software key, as when absent.
 */
/** A provisioned join answered for another node than the one expected (or did not join): nothing was stored. */
/** A provisioned join answered for another node than `--node-id` names: nothing was stored (exit 1). */
export class ProvisionedNodeMismatchError extends agentErrorClass('TRUST', 'ProvisionedNodeMismatchError') {}

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
  /** The trust set held (trust.json in `identityDir` of `pins` unless given); the answer's `trust` is stored in it. */
  trust?: TrustStore;
  nodeKey?: () => Promise<JoinKeys | null>;
  /** The token's role (`node` unless given; `bcd site` joins as `site`), which is also the certificate's role. */
  role?: string;
  /** The role the request asks for when it is not the certificate's (`provisioned`: a deploy's token, certified as `node`). */
  joinRole?: string;
  /** A provisioned join: an answer for any other node is refused and nothing is stored. */
  expectedNodeId?: string;
}): Promise<IssuedAnswer | PendingAnswer> {
  // A machine whose identity exists does nothing (bcd's "already joined"): joining first would spend the
  // token, and with allowReclaim revoke the working certificate, before the write is refused.
  if (!options.reset && (await hasIdentity(options.identityDir))) {
    throw new Error(`already joined: ${options.identityDir} holds an identity; join again with reset to replace it`);
  }
  const store = options.trust ?? (await TrustStore.open({ dir: options.identityDir, install: options.pins }));
  const trust = await resolveJoinTrust({ ...options, trust: store });
  const keys: JoinKeys = (await options.nodeKey?.()) ?? generateNodeKeyAndCsr();
  const role = options.joinRole ?? options.role;
  const attempt = await prepareJoinAttempt({ token: options.token.trim(), trust, claims: options.claims, keys, role });
  const answer = await sendJoin({ ...options, attempt, trust });
  if (options.expectedNodeId !== undefined && (answer.status !== 'joined' || answer.nodeId !== options.expectedNodeId)) {
    const got = answer.status === 'joined' ? `node ${answer.nodeId}` : `a ${answer.status} answer`;
    throw new ProvisionedNodeMismatchError(`The join answered ${got}, not node ${options.expectedNodeId}: nothing was stored`);
  }
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
    // The answer verified under a trusted key: its trust set is stored as a trust event's would be.
    if (answer.trust !== undefined) await store.acceptAnswerTrust(answer.trust, answer, 'join answer');
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
