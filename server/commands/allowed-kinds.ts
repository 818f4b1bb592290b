/**
 * The command kinds attestors put on certificates (protocol.md "Commands": allowed kinds, kept by renewals).
 * null (no list) is no restriction: node, provisioned, tpm and x509pop certificates.
 */

/** A discovery (ramdisk) certificate: a ramdisk runs only its doctor. */
export const RAMDISK_ALLOWED_KINDS: readonly string[] = ['bcd.doctor'];

/** A `node-tenant` certificate (a hosted token's tenant-controlled node): no platform command at all. */
export const TENANT_CONTROLLED_ALLOWED_KINDS: readonly string[] = [];
