/** The machine PKI: the bundle `pki init` makes, its sealing and storage, pins, and the certificates it issues. */
export { parseTrustDomain, dnsNameProblem, type DnsNameRules } from './trust-domain';
export { spkiPin, spkiDer, type PinnableKey } from './pins';
export { createPkiBundle, PKI_BACKDATE_SECONDS, PKI_VALIDITY_DAYS, type PkiBundle, type PkiCertifiedKey } from './bundle';
export { parsePkiBundle, pkiBundleSchema } from './bundle-schema';
export { MIN_SECRET_LENGTH, openPkiBundle, sealPkiBundle } from './seal';
export { hasPki, initPki, loadPki, PKI_BUNDLE_ID } from './store';
export { bootstrapPins, formatPins, installPins, type InstallPins } from './pins-summary';
export { GATEWAY_TTL_DAYS, issueGatewayCertificate, parseSans, type GatewayCertificate } from './gateway';
export {
  joinCryptoFromBundle,
  pkiJoinCrypto,
  wellKnownJoinSection,
  type JoinCrypto,
  type JoinCryptoInput,
  type PublicEcJwk,
  type WellKnownJoinSection,
} from './join-crypto';
export {
  issueNodeCertificate,
  MAX_NODE_CERT_TTL_SECONDS,
  MAX_RAMDISK_CERT_TTL_SECONDS,
  NODE_CERTIFICATE_ROLES,
  type IssuedNodeCertificate,
  type NodeCertificateRequest,
  type NodeCertificateRole,
} from './node-certificate';
export { prepareIssuer, type NodeCertificateIssuer } from './node-certificate-issuer';
