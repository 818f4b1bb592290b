import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { TpmAttestationBody } from '../agent/tpm/attestation';
import { TpmClient } from '../agent/tpm/client';
import { createTpmCsr } from '../agent/tpm/csr';
import { createEndorsementKey, type EndorsementKey } from '../agent/tpm/endorsement';
import { createAttestationKey, createNodeKey, loadKey, withStoragePrimary, type TpmKeyBlob } from '../agent/tpm/keys';
import type { EkKind } from '../agent/tpm/templates';
import { parseTpmAddress } from '../agent/tpm/transport';
import { ALG, ECC_CURVE, OBJECT } from '../protocol/tpm/constants';
import { TpmWriter } from '../protocol/tpm/marshal';
import { parseCsr } from '../server/join/crypto/csr';
import { startSwtpm, type Swtpm } from './swtpm';
import { createEkRoot } from './tpm-provision';

// The TPM attestor's round trip tests against swtpm: one swtpm per test file (a fresh TPM: new seeds, empty NV),
// an AK and a node key made in it, an EK vendor root, and round one as bcd makes it. Every test loads what it
// needs and flushes it. The bindings below are set by useSwtpm()'s beforeAll.

let swtpm: Swtpm;
export let tpm: TpmClient;
export let ak: TpmKeyBlob;
let nodeKey: TpmKeyBlob;
export let root: Awaited<ReturnType<typeof createEkRoot>>;
/** A directory holding `root` as the one configured EK vendor root. */
export let rootsDir: string;

/** Starts the file's swtpm before its tests and stops it after them. */
export function useSwtpm() {
  beforeAll(async () => {
    swtpm = await startSwtpm();
    tpm = await TpmClient.open(parseTpmAddress(swtpm.address));
    await tpm.startup();
    [ak, nodeKey] = await withStoragePrimary(tpm, async (srk) => [await createAttestationKey(tpm, srk), await createNodeKey(tpm, srk)]);
    root = await createEkRoot();
    rootsDir = mkdtempSync(join(tmpdir(), 'bc-ek-roots-'));
    writeFileSync(join(rootsDir, 'vendor.pem'), root.pem);
  });

  afterAll(async () => {
    await tpm?.close();
    await swtpm?.stop();
    if (rootsDir) rmSync(rootsDir, { recursive: true, force: true });
  });
}

/** Loads `blobs` under the storage primary, runs `use`, and flushes them (swtpm holds only 3 objects). */
export async function withKeys<T, const B extends readonly TpmKeyBlob[]>(
  blobs: B,
  use: (handles: { [K in keyof B]: number }) => Promise<T>,
): Promise<T> {
  const handles = await withStoragePrimary(tpm, async (srk) => {
    const loaded: number[] = [];
    for (const blob of blobs) loaded.push(await loadKey(tpm, srk, blob));
    return loaded;
  });
  try {
    return await use(handles as { [K in keyof B]: number }); // one handle per blob, in order
  } finally {
    for (const handle of handles) await tpm.flush(handle);
  }
}

export async function withEk<T>(kind: EkKind, use: (ek: EndorsementKey) => Promise<T>): Promise<T> {
  const ek = await createEndorsementKey(tpm, kind);
  try {
    return await use(ek);
  } finally {
    await tpm.flush(ek.handle);
  }
}

export async function newKey(template: Buffer): Promise<TpmKeyBlob> {
  return withStoragePrimary(tpm, (srk) => tpm.create(srk, template));
}

/**
 * Round one as bcd makes it: the node key signs its CSR in the TPM, the AK certifies the node key over
 * sha256(`certifyCsr` ?? that CSR). Returns the wire attestation and the CSR as the core parsed it.
 */
export async function roundOne(
  options: { kind?: EkKind; signer?: TpmKeyBlob; certified?: TpmKeyBlob; certifyOver?: Buffer; schemeless?: boolean } = {},
) {
  const signer = options.signer ?? ak;
  const certified = options.certified ?? nodeKey;
  // The EK is read first and flushed: swtpm holds three objects, and the storage primary and two keys fill them.
  const ek = await withEk(options.kind ?? 'ecc', async (loaded) => loaded);
  return withKeys([signer, certified], async ([signerHandle, certifiedHandle]) => {
    const csr = await createTpmCsr(tpm, certifiedHandle, certified.publicArea, { commonName: 'tpm-node' });
    const qualifying = options.certifyOver ?? csr.csrDer;
    const { attest, signature } = await tpm.certify(certifiedHandle, signerHandle, createHash('sha256').update(qualifying).digest(), {
      ecdsaSha256: options.schemeless,
    });
    const body: TpmAttestationBody = {
      ekPublic: ek.publicArea.toString('base64'),
      ...(ek.certificate ? { ekCertificate: ek.certificate.toString('base64') } : {}),
      akPublic: signer.publicArea.toString('base64'),
      nodeKeyPublic: certified.publicArea.toString('base64'),
      certifyInfo: attest.toString('base64'),
      certifySignature: signature.toString('base64'),
    };
    return { body, csr: parseCsr(csr.csrDer) };
  });
}

/** An ECC P-256 key template with `attributes` and, unless `scheme` is false, ECDSA sha256. */
export function eccTemplate(attributes: number, scheme = true): Buffer {
  const w = new TpmWriter().u16(ALG.ecc).u16(ALG.sha256).u32(attributes).sized(Buffer.alloc(0)).u16(ALG.null);
  if (scheme) w.u16(ALG.ecdsa).u16(ALG.sha256);
  else w.u16(ALG.null);
  return w.u16(ECC_CURVE.nistP256).u16(ALG.null).sized(Buffer.alloc(0)).sized(Buffer.alloc(0)).toBuffer();
}
export const TPM_MADE = OBJECT.fixedTPM | OBJECT.fixedParent | OBJECT.sensitiveDataOrigin | OBJECT.userWithAuth;
