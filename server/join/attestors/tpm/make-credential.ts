import { constants, createCipheriv, createECDH, createHmac, publicEncrypt, randomBytes } from 'node:crypto';
import { ALG, CURVES, NAME_HASHES } from '../../../../protocol/tpm/constants';
import { kdfa, kdfe } from './kdf';
import { publicKeyOf, type TpmPublic } from './public-area';
import { TpmCheckFailure } from './reasons';

/** What TPM2_ActivateCredential takes: the TPM2B_ID_OBJECT's and the TPM2B_ENCRYPTED_SECRET's contents. */
interface CredentialChallenge {
  readonly credentialBlob: Buffer;
  readonly encryptedSecret: Buffer;
}

const u16 = (value: number) => {
  const out = Buffer.alloc(2);
  out.writeUInt16BE(value);
  return out;
};
const sized = (bytes: Buffer) => Buffer.concat([u16(bytes.length), bytes]);

/**
 * MakeCredential (Part 1 §24, Part 3 §12.6) in software: wraps `credential` so that only the TPM holding `ek`'s
 * private key, with an object named `objectName` loaded, can recover it with TPM2_ActivateCredential.
 *
 * A seed of the EK's name-hash size is shared with the EK (RSA-OAEP with the label "IDENTITY\0" for an RSA EK;
 * for an ECC EK an ephemeral ECDH whose x-coordinate KDFe turns into the seed). From the seed KDFa derives the
 * AES key ("STORAGE", bound to the Name) that CFB-encrypts TPM2B(credential) and the HMAC key ("INTEGRITY")
 * over that ciphertext and the Name.
 *
 * @throws TpmCheckFailure `tpm:ek-type` when the EK is not a key MakeCredential can target.
 */
export function makeCredential(ek: TpmPublic, objectName: Buffer, credential: Buffer): CredentialChallenge {
  const hash = NAME_HASHES.get(ek.nameAlg);
  const sym = ek.symmetric;
  if (!hash || !sym || sym.algorithm !== ALG.aes || sym.mode !== ALG.cfb || ![128, 192, 256].includes(sym.keyBits)) {
    throw new TpmCheckFailure('tpm:ek-type', 'the EK has no AES-CFB symmetric definition and a sha2 name algorithm');
  }
  if (credential.length === 0 || credential.length > hash.size) throw new RangeError(`a credential is 1 to ${hash.size} bytes`);

  let seed: Buffer;
  let encryptedSecret: Buffer;
  if (ek.type === 'rsa') {
    seed = randomBytes(hash.size);
    encryptedSecret = publicEncrypt(
      {
        key: publicKeyOf(ek),
        padding: constants.RSA_PKCS1_OAEP_PADDING,
        oaepHash: hash.name,
        oaepLabel: Buffer.from('IDENTITY\0', 'latin1'),
      },
      seed,
    );
  } else {
    const curve = CURVES.get(ek.ecc!.curve);
    if (!curve) throw new TpmCheckFailure('tpm:ek-type', 'the EK curve is not supported');
    publicKeyOf(ek); // refuses a point off the curve before it is used in ECDH
    const ecdh = createECDH(curve.ecdh);
    const ephemeral = ecdh.generateKeys();
    const ephemeralX = ephemeral.subarray(1, 1 + curve.size);
    const ephemeralY = ephemeral.subarray(1 + curve.size);
    const ekPoint = Buffer.concat([Buffer.of(4), ek.ecc!.x, ek.ecc!.y]);
    const z = ecdh.computeSecret(ekPoint);
    seed = kdfe(hash.name, z, 'IDENTITY', ephemeralX, ek.ecc!.x, hash.size * 8);
    // TPMS_ECC_POINT of the ephemeral key: what the TPM multiplies by the EK's private scalar.
    encryptedSecret = Buffer.concat([sized(ephemeralX), sized(ephemeralY)]);
  }

  const symmetricKey = kdfa(hash.name, seed, 'STORAGE', objectName, Buffer.alloc(0), sym.keyBits);
  const cipher = createCipheriv(`aes-${sym.keyBits}-cfb`, symmetricKey, Buffer.alloc(16));
  const encIdentity = Buffer.concat([cipher.update(sized(credential)), cipher.final()]);
  const hmacKey = kdfa(hash.name, seed, 'INTEGRITY', Buffer.alloc(0), Buffer.alloc(0), hash.size * 8);
  const integrity = createHmac(hash.name, hmacKey).update(encIdentity).update(objectName).digest();
  seed.fill(0);
  return { credentialBlob: Buffer.concat([sized(integrity), encIdentity]), encryptedSecret };
}
