import { createHash } from 'node:crypto';
import { renewPopMessage } from '../../protocol/renew-wire';
import type { TpmCsr } from '../tpm/csr';
import { withTpm } from '../tpm/identify';
import { encodeKeyBlob, type TpmKeyBlob } from '../tpm/keys';
import { makeTpmNodeKey } from '../tpm/node-key';
import { prepareTpmRenewal, signWithTpmKey, TpmRenewalError, type TpmKeyAttestationBody } from '../tpm/renewal';
import { tpmTlsSigner } from '../tpm/tls-signer';
import type { ClientIdentity } from './gateway-client';
import { AK_KEY_FILE } from '../identity-store';
import type { NodeLoadedIdentity, TpmLoadedIdentity } from './identity';
import { chainToPem } from './gateway-client';
import { helperTlsSigner } from '../helper/client';

/** What a TPM-bound identity's renewal sends, all made in the TPM before anything is sent. */
interface TpmRenewalParts {
  readonly nodeKey: TpmKeyBlob;
  readonly csr: TpmCsr;
  readonly keyAttestation?: TpmKeyAttestationBody;
  readonly clientTime: number;
  readonly popSig: Buffer;
}

/**
 * The next node key of a TPM-held identity, its CSR signed in the TPM, and, when the leaf names an AK, that AK's
 * Certify of it over sha256(csr): what a renewal and an x509pop re-join send. Throws when the leaf names an AK and
 * no AK blob is kept, the blob does not load, or the TPM's AK is another.
 */
export async function nextTpmKey(
  tpm: Parameters<typeof prepareTpmRenewal>[0],
  { ak, akStatement }: Pick<TpmLoadedIdentity['tpm'], 'ak' | 'akStatement'>,
): Promise<{ nodeKey: TpmKeyBlob; csr: TpmCsr; keyAttestation?: TpmKeyAttestationBody }> {
  // A leaf without an AK statement: the next key is made in the TPM all the same, proved by possession only.
  if (!akStatement) return makeTpmNodeKey(tpm);
  if (!ak)
    throw new TpmRenewalError(
      `the certificate names ${akStatement}, but the identity directory holds no ${AK_KEY_FILE}: the renewal needs that AK`,
    );
  return prepareTpmRenewal(tpm, { ak, akStatement });
}

/**
 * Everything a renewal of a TPM-held key needs, in one session with the TPM: the next node key and its CSR
 * (signed in the TPM), the AK's Certify of it when the leaf names an AK (`urn:bc:tpm-ak:`), and the proof of
 * possession by the current key. It throws, so nothing is sent, when the TPM cannot be opened, the leaf names an
 * AK and no AK blob is kept, the blob does not load (a cleared or replaced TPM), or the TPM's AK is another.
 *
 * @throws TpmRenewalError, TpmError, or the TPM's transport error.
 */
export async function prepareTpmRenewalParts(current: TpmLoadedIdentity, now: () => number): Promise<TpmRenewalParts> {
  const { nodeKey, address, helper } = current.tpm;
  if (helper) {
    // Under [helper], bcd helper holds the TPM: the same parts, each made there.
    const next = await helper.nextKey(current.tpm);
    const clientTime = Math.floor(now() / 1000);
    const popSig = await helper.sign(nodeKey, 'renew-pop', renewPopMessage(next.csr.csrSha256, current.identity.nodeId, clientTime));
    return { ...next, clientTime, popSig };
  }
  return withTpm(address, async (tpm) => {
    const next = await nextTpmKey(tpm, current.tpm);
    const clientTime = Math.floor(now() / 1000);
    const message = renewPopMessage(next.csr.csrSha256, current.identity.nodeId, clientTime);
    const popSig = await signWithTpmKey(tpm, nodeKey, createHash('sha256').update(message).digest());
    return { ...next, clientTime, popSig };
  });
}

/** The renewed identity of a TPM-held key: `node.key` becomes the next key's blob; the AK stays. */
export function renewedTpmIdentity(
  current: TpmLoadedIdentity,
  parts: TpmRenewalParts,
  renewed: { chain: string[]; leaf: TpmLoadedIdentity['leaf'] },
): TpmLoadedIdentity {
  return {
    ...current,
    identity: { ...current.identity, privateKeyPem: encodeKeyBlob(parts.nodeKey), certificateChain: renewed.chain },
    tpm: { ...current.tpm, nodeKey: parts.nodeKey },
    leaf: renewed.leaf,
    notBefore: new Date(renewed.leaf.validFrom),
    notAfter: new Date(renewed.leaf.validTo),
  };
}

// One client identity per loaded identity, so that its TLS context is made once (gateway-client.ts).
const clientIdentities = new WeakMap<NodeLoadedIdentity, ClientIdentity>();

/**
 * What the gateway's mutual TLS presents for an identity: the PEM key and leaf, or, for a TPM-held key, a signer
 * that has the TPM sign the TLS 1.3 CertificateVerify (agent/tls13).
 */
export function clientIdentityOf(current: NodeLoadedIdentity): ClientIdentity {
  let client = clientIdentities.get(current);
  if (!client) {
    const leaf = current.identity.certificateChain[0]!;
    // Under [helper], bcd helper signs the CertificateVerify instead of the TPM opened here.
    const tpmSigner = current.tpm?.helper ? helperTlsSigner(current.tpm.helper) : tpmTlsSigner;
    client = current.tpm
      ? { signer: tpmSigner(current.tpm.address, current.tpm.nodeKey, [Buffer.from(leaf, 'base64')]) }
      : { keyPem: current.identity.privateKeyPem, certificatePem: chainToPem([leaf]) };
    clientIdentities.set(current, client);
  }
  return client;
}
