import { ALG, ECC_CURVE, OBJECT } from '../../protocol/tpm/constants';
import { TpmWriter } from '../../protocol/tpm/marshal';

/**
 * The TPMT_PUBLIC templates bcd creates its keys from (Part 2 §12.2.4), marshalled by hand. The EK templates
 * are the TCG EK Credential Profile's default low-range ones (2.0 rev 14 §B.3.3 "L-1" RSA-2048 and §B.3.4
 * "L-2" ECC P-256): the same template makes the same EK on every call, which is what its certificate certifies.
 */

/** PolicySecret(TPM_RH_ENDORSEMENT) with sha256: the authPolicy of both default EK templates. */
const EK_AUTH_POLICY = Buffer.from('837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa', 'hex');

/** The EK: a restricted decryption key used only through its policy (adminWithPolicy, no userWithAuth). */
const EK_ATTRIBUTES =
  OBJECT.fixedTPM | OBJECT.fixedParent | OBJECT.sensitiveDataOrigin | OBJECT.adminWithPolicy | OBJECT.restricted | OBJECT.decrypt;
/** The storage primary: a restricted decryption key with an (empty) password, excluded from dictionary lockout. */
const STORAGE_ATTRIBUTES =
  OBJECT.fixedTPM |
  OBJECT.fixedParent |
  OBJECT.sensitiveDataOrigin |
  OBJECT.userWithAuth |
  OBJECT.noDA |
  OBJECT.restricted |
  OBJECT.decrypt;
const SIGNING_ATTRIBUTES = OBJECT.fixedTPM | OBJECT.fixedParent | OBJECT.sensitiveDataOrigin | OBJECT.userWithAuth | OBJECT.sign;

export type EkKind = 'rsa' | 'ecc';

/** AES-128-CFB: the symmetric definition of every storage key and EK here (TPMT_SYM_DEF_OBJECT). */
const aes128Cfb = (w: TpmWriter) => w.u16(ALG.aes).u16(128).u16(ALG.cfb);

function eccPublic(attributes: number, authPolicy: Buffer, details: (w: TpmWriter) => void): Buffer {
  const w = new TpmWriter().u16(ALG.ecc).u16(ALG.sha256).u32(attributes).sized(authPolicy);
  details(w);
  // unique: two 32-byte zero coordinates, as the TCG templates fix for P-256 (and harmless for Create).
  return w.sized(Buffer.alloc(32)).sized(Buffer.alloc(32)).toBuffer();
}

/** The default EK template of `kind` (L-1 RSA-2048 or L-2 ECC P-256). */
export function ekTemplate(kind: EkKind): Buffer {
  if (kind === 'ecc') {
    return eccPublic(EK_ATTRIBUTES, EK_AUTH_POLICY, (w) => aes128Cfb(w).u16(ALG.null).u16(ECC_CURVE.nistP256).u16(ALG.null));
  }
  return new TpmWriter()
    .u16(ALG.rsa)
    .u16(ALG.sha256)
    .u32(EK_ATTRIBUTES)
    .sized(EK_AUTH_POLICY)
    .bytes(new TpmWriter().u16(ALG.aes).u16(128).u16(ALG.cfb).toBuffer())
    .u16(ALG.null) // scheme
    .u16(2048)
    .u32(0) // exponent: 0 means 65537
    .sized(Buffer.alloc(256))
    .toBuffer();
}

/**
 * The storage primary bcd's keys live under: the TCG provisioning guidance's ECC P-256 SRK template in the
 * owner hierarchy, so it is re-derived on every start and never needs a persistent handle.
 */
export function storagePrimaryTemplate(): Buffer {
  return eccPublic(STORAGE_ATTRIBUTES, Buffer.alloc(0), (w) => aes128Cfb(w).u16(ALG.null).u16(ECC_CURVE.nistP256).u16(ALG.null));
}

/**
 * The attestation key: a restricted ECDSA P-256 sha256 signing key. Restricted means the TPM signs with it
 * only digests it computed itself (never data that starts with TPM_GENERATED_VALUE), so its TPM2_Certify is
 * evidence.
 */
export function attestationKeyTemplate(): Buffer {
  return eccPublic(SIGNING_ATTRIBUTES | OBJECT.restricted, Buffer.alloc(0), (w) =>
    w.u16(ALG.null).u16(ALG.ecdsa).u16(ALG.sha256).u16(ECC_CURVE.nistP256).u16(ALG.null),
  );
}

/** The node key: an unrestricted ECDSA P-256 sha256 signing key, so it can sign a CSR and renewal proofs. */
export function nodeKeyTemplate(): Buffer {
  return eccPublic(SIGNING_ATTRIBUTES, Buffer.alloc(0), (w) =>
    w.u16(ALG.null).u16(ALG.ecdsa).u16(ALG.sha256).u16(ECC_CURVE.nistP256).u16(ALG.null),
  );
}
