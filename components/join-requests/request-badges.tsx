import { hardwareKeyWording } from '@/lib/join-request-queue';

/** The badge of a hardware key, in the one wording requests and nodes share. */
export function HardwareKeyBadge({ hasKey, isTrusted, isRamdisk }: { hasKey: boolean; isTrusted: boolean; isRamdisk?: boolean }) {
  const wording = hardwareKeyWording(hasKey, isTrusted, isRamdisk);
  return wording.tone === 'none' ? (
    <span className="muted" title={wording.title}>
      {wording.label}
    </span>
  ) : (
    <span className={`badge badge-${wording.tone}`} title={wording.title}>
      {wording.label}
    </span>
  );
}

/** A tpm enrollment whose EK certificate does not chain to a configured vendor root (or that sent none). */
export function EkNotCertifiedBadge() {
  return (
    <span
      className="badge badge-warn ek-uncertified"
      title="The TPM's endorsement key has no certificate from a configured TPM vendor root: nothing but this request vouches that it is a real TPM"
    >
      EK not vendor-certified
    </span>
  );
}
