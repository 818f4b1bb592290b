/**
 * The TPM 2.0 numbers bcd speaks and the server reads (TPM 2.0 Library, Part 2: Structures). Only what the join
 * and renewal paths use; each name is the specification's without its `TPM_` / `TPM2_` prefix.
 */

/** Structure tags (TPM_ST): of commands, and of the attestation TPM2_Certify makes. */
export const ST = { noSessions: 0x8001, sessions: 0x8002, attestCertify: 0x8017, hashcheck: 0x8024 } as const;

/** Command codes (TPM_CC). */
export const CC = {
  nvWrite: 0x137,
  nvDefineSpace: 0x12a,
  createPrimary: 0x131,
  startup: 0x144,
  activateCredential: 0x147,
  certify: 0x148,
  nvRead: 0x14e,
  policySecret: 0x151,
  create: 0x153,
  load: 0x157,
  sign: 0x15d,
  flushContext: 0x165,
  nvReadPublic: 0x169,
  readPublic: 0x173,
  startAuthSession: 0x176,
  getCapability: 0x17a,
} as const;

/** Algorithm identifiers (TPM_ALG). */
export const ALG = {
  rsa: 0x0001,
  sha1: 0x0004,
  aes: 0x0006,
  keyedHash: 0x0008,
  sha256: 0x000b,
  sha384: 0x000c,
  sha512: 0x000d,
  null: 0x0010,
  rsassa: 0x0014,
  rsapss: 0x0016,
  oaep: 0x0017,
  ecdsa: 0x0018,
  ecc: 0x0023,
  symCipher: 0x0025,
  cfb: 0x0043,
} as const;

/** ECC curves (TPM_ECC_CURVE). */
export const ECC_CURVE = { nistP256: 0x0003, nistP384: 0x0004 } as const;

/** The name algorithms a Name may use: node:crypto's hash name and the digest size. SHA-1 is not accepted. */
export const NAME_HASHES: ReadonlyMap<number, { name: 'sha256' | 'sha384' | 'sha512'; size: number }> = new Map([
  [ALG.sha256, { name: 'sha256', size: 32 }],
  [ALG.sha384, { name: 'sha384', size: 48 }],
  [ALG.sha512, { name: 'sha512', size: 64 }],
]);

/** The curves a key may be on, with their JWK and ECDH names and their coordinate sizes. */
export const CURVES: ReadonlyMap<number, { jwk: 'P-256' | 'P-384'; ecdh: 'prime256v1' | 'secp384r1'; size: number }> = new Map([
  [ECC_CURVE.nistP256, { jwk: 'P-256', ecdh: 'prime256v1', size: 32 }],
  [ECC_CURVE.nistP384, { jwk: 'P-384', ecdh: 'secp384r1', size: 48 }],
]);

/** TPM_GENERATED_VALUE, the first four bytes of every TPMS_ATTEST the TPM itself made. */
export const TPM_GENERATED_VALUE = 0xff544347;

/** Permanent handles (TPM_RH / TPM_RS). */
export const RH = {
  owner: 0x40000001,
  null: 0x40000007,
  passwordSession: 0x40000009,
  endorsement: 0x4000000b,
  platform: 0x4000000c,
} as const;

/** TPMA_OBJECT bits. */
export const OBJECT = {
  fixedTPM: 1 << 1,
  fixedParent: 1 << 4,
  sensitiveDataOrigin: 1 << 5,
  userWithAuth: 1 << 6,
  adminWithPolicy: 1 << 7,
  noDA: 1 << 10,
  restricted: 1 << 16,
  decrypt: 1 << 17,
  sign: 1 << 18,
} as const;

/** Response codes bcd acts on (TPM_RC). */
export const RC = {
  success: 0x000,
  /** TPM2_Startup on a TPM that already started. */
  initialize: 0x100,
  /** An NV index or handle that does not exist (format-1 code with a handle number). */
  handleBase: 0x08b,
} as const;

/** TPM_SE: the session types of TPM2_StartAuthSession. */
export const SE = { policy: 0x01 } as const;

/** TPM_CAP and the TPM_PT properties bcd reads. */
export const CAP = { handles: 0x00000001, tpmProperties: 0x00000006 } as const;
export const PT = { manufacturer: 0x105, nvBufferMax: 0x12c } as const;

/** The NV indices where the TCG EK Credential Profile (§2.2.1.5) puts the EK certificates. */
export const EK_CERT_NV_INDEX = { rsa2048: 0x01c00002, eccP256: 0x01c0000a } as const;

/** TPM_SU_CLEAR, TPM2_Startup's argument after a reset. */
export const SU_CLEAR = 0x0000;
