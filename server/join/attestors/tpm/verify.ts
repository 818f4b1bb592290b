import { createHash, type X509Certificate } from 'node:crypto';
import { ALG, CURVES, ECC_CURVE, NAME_HASHES, OBJECT, ST, TPM_GENERATED_VALUE } from '../../../../protocol/tpm/constants';
import { parseTpmAttest, verifyEcdsaSignature } from './attest';
import { checkEkCertificate, type EkCertificateFacts } from './ek-certificate';
import { hasAttribute, parseTpmPublic, publicKeyOf, spkiOf, tpmName, type TpmPublic } from './public-area';
import { TpmCheckFailure, type TpmRefusalReason } from './reasons';
import type { TpmAttestationWire } from './wire';

/** What a TPM join's round one is checked against besides its attestation. */
interface TpmCheckContext {
  /** Lowercase hex sha256 of the join's CSR (already parsed and self-signature checked by the core). */
  readonly csrSha256: string;
  /** The CSR's DER SubjectPublicKeyInfo. */
  readonly csrSpki: Buffer;
  /** The vendor EK roots (`loadEkRoots`); empty means every EK is enrolled or allow-listed. */
  readonly ekRoots: readonly X509Certificate[];
  readonly now: Date;
}

/** The facts of an attestation every check passed: what the attestor decides and writes with. */
export interface VerifiedTpmAttestation {
  /** Lowercase hex sha256 of the EK's DER SubjectPublicKeyInfo: the allow-list and enrollment key. */
  readonly ekHash: string;
  readonly ek: TpmPublic;
  /** The EK certificate's facts, or null when the TPM has none ("no EK certificate" in the queue). */
  readonly ekCertificate: EkCertificateFacts | null;
  /** The AK's Name (nameAlg || digest): what MakeCredential binds the challenge to. */
  readonly akName: Buffer;
  /** `urn:bc:tpm-ak:<nameAlg>:<hex digest>`, the statement an admitted join writes into the leaf. */
  readonly akStatement: string;
  /** The node key's DER SubjectPublicKeyInfo (equal to the CSR's). */
  readonly nodeKeySpki: Buffer;
}

export type TpmVerdict = { ok: true; facts: VerifiedTpmAttestation } | { ok: false; reason: TpmRefusalReason; detail: string };

/**
 * Runs every check of a `tpm` join's round one, in order, and returns the first failure's reason or the
 * verified facts. Pure: no database, no clock but `context.now`, no randomness; the credential challenge
 * (`makeCredential` to `facts.ek` for `facts.akName`) and the decision (EK root, allow-list, enrollment) are
 * the attestor's.
 *
 * The checks: the EK is a TPM-resident restricted decryption key, and its certificate, when sent, certifies
 * it; the AK is a TPM-made (fixedTPM, fixedParent, sensitiveDataOrigin) restricted ECDSA P-256 signing key
 * without decrypt; the node key is a TPM-made, non-restricted P-256 signing key whose SPKI is the CSR's; the
 * attestation is a TPM-generated TPM2_Certify signed by the AK whose qualifying data is sha256(csr) and whose
 * certified Name is the node key's.
 */
export function verifyTpmAttestation(attestation: TpmAttestationWire, context: TpmCheckContext): TpmVerdict {
  try {
    return { ok: true, facts: runChecks(attestation, context) };
  } catch (error) {
    if (error instanceof TpmCheckFailure) return { ok: false, reason: error.reason, detail: error.detail };
    throw error;
  }
}

function fail(reason: TpmRefusalReason, detail: string): never {
  throw new TpmCheckFailure(reason, detail);
}

function runChecks(attestation: TpmAttestationWire, context: TpmCheckContext): VerifiedTpmAttestation {
  const ek = parseTpmPublic(attestation.ekPublic, 'the EK public area');
  const ak = parseTpmPublic(attestation.akPublic, 'the AK public area');
  const nodeKey = parseTpmPublic(attestation.nodeKeyPublic, 'the node key public area');

  checkEk(ek);
  const ekKey = publicKeyOf(ek);
  const ekCertificate = attestation.ekCertificate
    ? checkEkCertificate(attestation.ekCertificate, attestation.ekIntermediates ?? [], context.ekRoots, ekKey, context.now)
    : null;

  checkTpmMade(ak, 'ak');
  // Before the type: a key that signs and decrypts has no scheme of its own, and the decrypt is the reason.
  if (hasAttribute(ak, OBJECT.decrypt)) fail('tpm:ak-decrypt', 'the AK can decrypt');
  if (!isEcdsaP256Sha256(ak)) fail('tpm:ak-type', 'the AK is not an ECDSA P-256 sha256 key');
  if (!hasAttribute(ak, OBJECT.restricted)) fail('tpm:ak-restricted', 'the AK is not restricted');
  if (!hasAttribute(ak, OBJECT.sign)) fail('tpm:ak-type', 'the AK cannot sign');

  const nodeKeySpki = checkCertifiedNodeKey(ak, nodeKey, attestation, context.csrSha256, context.csrSpki);

  const akName = tpmName(ak);
  return {
    ekHash: createHash('sha256').update(spkiOf(ek)).digest('hex'),
    ek,
    ekCertificate,
    akName,
    akStatement: akStatementOf(ak),
    nodeKeySpki,
  };
}

/** `urn:bc:tpm-ak:<nameAlg>:<hex digest>` of an AK: the leaf statement naming it (its Name, spelled out). */
export function akStatementOf(ak: TpmPublic): string {
  const name = tpmName(ak); // throws tpm:attestation for a name algorithm that is not accepted
  return `urn:bc:tpm-ak:${NAME_HASHES.get(ak.nameAlg)!.name}:${name.subarray(2).toString('hex')}`;
}

/** A TPM2_Certify of a key by an AK, as it travels (the Certify fields of a join's or a renewal's attestation). */
interface CertifyWire {
  readonly certifyInfo: Buffer;
  readonly certifySignature: Buffer;
}

/**
 * The node key and its certification, shared by a `tpm` join and a renewal's key attestation: the node key is
 * a TPM-made, non-restricted P-256 signing key whose SPKI is the CSR's; the attestation is a TPM-generated
 * TPM2_Certify signed by `ak` whose qualifying data is sha256(csr) and whose certified Name is the node key's.
 * Returns the node key's SPKI.
 *
 * @throws TpmCheckFailure with the first failing check's reason.
 */
export function checkCertifiedNodeKey(ak: TpmPublic, nodeKey: TpmPublic, certify: CertifyWire, csrSha256: string, csrSpki: Buffer): Buffer {
  checkTpmMade(nodeKey, 'node-key');
  if (nodeKey.type !== 'ecc' || nodeKey.ecc!.curve !== ECC_CURVE.nistP256) fail('tpm:node-key-type', 'the node key is not ECC P-256');
  if (hasAttribute(nodeKey, OBJECT.restricted)) fail('tpm:node-key-restricted', 'the node key is restricted');
  if (!hasAttribute(nodeKey, OBJECT.sign)) fail('tpm:node-key-sign', 'the node key cannot sign');
  const nodeKeySpki = spkiOf(nodeKey);
  if (!nodeKeySpki.equals(csrSpki)) fail('tpm:node-key-csr', 'the node key is not the CSR key');

  const attest = parseTpmAttest(certify.certifyInfo);
  if (attest.magic !== TPM_GENERATED_VALUE) fail('tpm:attest-magic', 'the attestation was not generated by a TPM');
  if (attest.type !== ST.attestCertify || !attest.certified) fail('tpm:attest-type', 'the attestation is not TPM2_Certify');
  if (!verifyEcdsaSignature(ak, certify.certifyInfo, certify.certifySignature, 'the certify signature')) {
    fail('tpm:attest-signature', 'the attestation is not signed by the AK');
  }
  if (!attest.extraData.equals(Buffer.from(csrSha256, 'hex'))) fail('tpm:attest-qualifying-data', 'qualifying data is not sha256(csr)');
  if (!attest.certified.name.equals(tpmName(nodeKey))) fail('tpm:attest-name', 'the attestation certifies another object');
  return nodeKeySpki;
}

/** An endorsement key as the TCG templates make it: a TPM-resident restricted decryption key, RSA-2048 or ECC. */
function checkEk(ek: TpmPublic): void {
  if (!NAME_HASHES.has(ek.nameAlg)) fail('tpm:ek-type', 'the EK name algorithm is not sha256, sha384 or sha512');
  if (ek.type === 'rsa' && ek.rsa!.keyBits !== 2048) fail('tpm:ek-type', 'the RSA EK is not 2048 bits');
  if (ek.type === 'ecc' && !CURVES.has(ek.ecc!.curve)) fail('tpm:ek-type', 'the ECC EK is not P-256 or P-384');
  if (ek.symmetric?.algorithm !== ALG.aes || ek.symmetric.mode !== ALG.cfb)
    fail('tpm:ek-type', 'the EK has no AES-CFB symmetric definition');
  const required = OBJECT.fixedTPM | OBJECT.fixedParent | OBJECT.sensitiveDataOrigin | OBJECT.restricted | OBJECT.decrypt;
  if ((ek.attributes & required) !== required || hasAttribute(ek, OBJECT.sign)) {
    fail('tpm:ek-attributes', 'the EK is not a TPM-resident restricted decryption key');
  }
}

/** fixedTPM, fixedParent and sensitiveDataOrigin: the key was made in this TPM and can never leave it. */
function checkTpmMade(key: TpmPublic, who: 'ak' | 'node-key'): void {
  if (!hasAttribute(key, OBJECT.fixedTPM)) fail(`tpm:${who}-fixed-tpm`, `the ${who} is not fixedTPM`);
  if (!hasAttribute(key, OBJECT.fixedParent)) fail(`tpm:${who}-fixed-parent`, `the ${who} is not fixedParent`);
  if (!hasAttribute(key, OBJECT.sensitiveDataOrigin)) fail(`tpm:${who}-sensitive-data-origin`, `the ${who} was imported`);
}

function isEcdsaP256Sha256(key: TpmPublic): boolean {
  return (
    key.type === 'ecc' && key.ecc!.curve === ECC_CURVE.nistP256 && key.scheme?.algorithm === ALG.ecdsa && key.scheme.hashAlg === ALG.sha256
  );
}
