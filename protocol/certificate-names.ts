import { DerError, childAt, contentOf, encodingOf, expectElement, readChildren, readElement } from './der/reader';
import { TAG } from './der/tags';

/** What the agent checks in an issued leaf: the key it certifies and the names it carries. */
interface LeafNames {
  /** DER SubjectPublicKeyInfo, byte for byte as in the certificate. */
  readonly spkiDer: Buffer;
  /** URI SANs in certificate order. */
  readonly uris: string[];
  /** Every subject OU value, in order. */
  readonly organizationalUnits: string[];
}

const OID_SUBJECT_ALT_NAME = Buffer.from('551d11', 'hex');
const OID_ORGANIZATIONAL_UNIT = Buffer.from('55040b', 'hex');
const URI_NAME = 0x86; // [6] IMPLICIT IA5String
const STRING_TAGS = new Set([0x0c, 0x13, 0x14, 0x16]); // UTF8String, PrintableString, T61String, IA5String
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads the SPKI, the URI SANs and the subject OUs of an X.509 certificate with the strict DER reader, in
 * microseconds: every simulated agent does this once per join. Signatures and validity are not checked
 * here; the leaf is trusted because the signed answer carries it.
 *
 * @throws DerError when the certificate is not well-formed DER of the expected shape.
 */
export function readLeafNames(der: Buffer): LeafNames {
  const certificate = expectElement(der, 0, der.length, TAG.sequence, 'Certificate');
  if (certificate.end !== der.length) throw new DerError('trailing bytes after the certificate');
  const tbs = expectElement(der, certificate.contentStart, certificate.end, TAG.sequence, 'tbsCertificate');
  const fields = readChildren(der, tbs);
  const at = fields[0]?.tag === 0xa0 ? 1 : 0; // explicit version
  if (fields.length < at + 6) throw new DerError('tbsCertificate is too short');
  const subject = childAt(fields, at + 4, 'subject');
  const spki = childAt(fields, at + 5, 'subjectPublicKeyInfo');
  if (subject.tag !== TAG.sequence || spki.tag !== TAG.sequence) throw new DerError('malformed subject or key');

  const organizationalUnits: string[] = [];
  for (const rdn of readChildren(der, subject)) {
    if (rdn.tag !== TAG.set) throw new DerError('malformed subject');
    for (const attribute of readChildren(der, rdn)) {
      const [type, value] = readChildren(der, attribute);
      if (type?.tag !== TAG.oid || !value) throw new DerError('malformed subject attribute');
      if (!contentOf(der, type).equals(OID_ORGANIZATIONAL_UNIT)) continue;
      if (!STRING_TAGS.has(value.tag)) throw new DerError('OU is not a string');
      organizationalUnits.push(utf8.decode(contentOf(der, value)));
    }
  }

  const uris: string[] = [];
  const extensions = fields.slice(at + 6).find((field) => field.tag === 0xa3);
  let seenAltName = false;
  if (extensions) {
    const list = expectElement(der, extensions.contentStart, extensions.end, TAG.sequence, 'extensions');
    for (const extension of readChildren(der, list)) {
      const parts = readChildren(der, extension);
      const oid = parts[0];
      const value = parts.at(-1);
      if (oid?.tag !== TAG.oid || value?.tag !== TAG.octetString) throw new DerError('malformed extension');
      if (!contentOf(der, oid).equals(OID_SUBJECT_ALT_NAME)) continue;
      if (seenAltName) throw new DerError('two subjectAltName extensions');
      seenAltName = true;
      const names = readElement(der, value.contentStart, value.end);
      if (names.tag !== TAG.sequence || names.end !== value.end) throw new DerError('malformed subjectAltName');
      for (const name of readChildren(der, names)) {
        if (name.tag === URI_NAME) uris.push(contentOf(der, name).toString('latin1'));
      }
    }
  }
  return { spkiDer: Buffer.from(encodingOf(der, spki)), uris, organizationalUnits };
}
