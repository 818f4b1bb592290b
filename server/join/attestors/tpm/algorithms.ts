/** The TPM 2.0 identifiers the server reads (TPM 2.0 Library, Part 2), named as there without `TPM_ALG_`. */
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
  ecdsa: 0x0018,
  ecc: 0x0023,
  symCipher: 0x0025,
  cfb: 0x0043,
} as const;

/** The name algorithms a Name may use: node:crypto's hash name and the digest size. SHA-1 is not accepted. */
export const NAME_HASHES: ReadonlyMap<number, { name: 'sha256' | 'sha384' | 'sha512'; size: number }> = new Map([
  [ALG.sha256, { name: 'sha256', size: 32 }],
  [ALG.sha384, { name: 'sha384', size: 48 }],
  [ALG.sha512, { name: 'sha512', size: 64 }],
]);

/** TPM_ECC_CURVE values and their coordinate sizes. */
export const CURVES: ReadonlyMap<number, { jwk: 'P-256' | 'P-384'; ecdh: 'prime256v1' | 'secp384r1'; size: number }> = new Map([
  [0x0003, { jwk: 'P-256', ecdh: 'prime256v1', size: 32 }],
  [0x0004, { jwk: 'P-384', ecdh: 'secp384r1', size: 48 }],
]);
export const CURVE_NIST_P256 = 0x0003;

/** TPMA_OBJECT bits. */
export const OBJECT = {
  fixedTPM: 1 << 1,
  fixedParent: 1 << 4,
  sensitiveDataOrigin: 1 << 5,
  restricted: 1 << 16,
  decrypt: 1 << 17,
  sign: 1 << 18,
} as const;

/** TPM_GENERATED_VALUE, the first four bytes of every TPMS_ATTEST the TPM itself made. */
export const TPM_GENERATED_VALUE = 0xff544347;
/** TPM_ST_ATTEST_CERTIFY. */
export const ST_ATTEST_CERTIFY = 0x8017;
