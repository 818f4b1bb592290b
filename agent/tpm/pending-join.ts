import { readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { writeTemporary } from '../identity-store';
import type { TpmAttestationBody } from './attestation';
import type { TpmJoinMaterial } from './join-material';
import type { TpmJoinTarget } from './tpm-join';

/**
 * A `tpm` join waiting for an operator, kept in the data directory (0600) between runs of `bcd join`: an
 * approval admits only the retry whose CSR hash is the request's, so a join that was stopped while it waited
 * must come back with the same node key, AK and CSR. The key blobs are wrapped by this TPM and useless on
 * another; nothing in the file is secret.
 */
const TPM_PENDING_JOIN_FILE = 'tpm-join.pending';

interface PendingFile {
  version: 1;
  siteId: string;
  poolId: string | null;
  ekKind: TpmJoinMaterial['ekKind'];
  ak: { publicArea: string; privateBlob: string };
  nodeKey: { publicArea: string; privateBlob: string };
  csr: { csrDer: string; spkiDer: string; csrSha256: string };
  attestation: TpmAttestationBody;
}

const b64 = (bytes: Buffer) => bytes.toString('base64');
const bytes = (text: string) => Buffer.from(text, 'base64');

/** Saves the material of a pending join for `target` (atomically: a flushed temporary file renamed into place). */
export async function savePendingTpmJoin(dir: string, target: TpmJoinTarget, material: TpmJoinMaterial): Promise<void> {
  const record: PendingFile = {
    version: 1,
    siteId: target.siteId,
    poolId: target.poolId ?? null,
    ekKind: material.ekKind,
    ak: { publicArea: b64(material.ak.publicArea), privateBlob: b64(material.ak.privateBlob) },
    nodeKey: { publicArea: b64(material.nodeKey.publicArea), privateBlob: b64(material.nodeKey.privateBlob) },
    csr: { csrDer: b64(material.csr.csrDer), spkiDer: b64(material.csr.spkiDer), csrSha256: material.csr.csrSha256 },
    attestation: material.attestation,
  };
  const file = path.join(dir, TPM_PENDING_JOIN_FILE);
  await rename(await writeTemporary(file, `${JSON.stringify(record)}\n`), file);
}

/**
 * The saved material of a pending join for the same site and pool, or null: none saved, or saved for another
 * target (then the join starts afresh, and the old request simply expires). A file that does not parse is an
 * error naming it, never silently replaced.
 */
export async function loadPendingTpmJoin(dir: string, target: TpmJoinTarget): Promise<TpmJoinMaterial | null> {
  const file = path.join(dir, TPM_PENDING_JOIN_FILE);
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (text === null) return null;
  let record: PendingFile;
  try {
    record = JSON.parse(text) as PendingFile;
    if (record.version !== 1 || typeof record.csr?.csrSha256 !== 'string' || typeof record.attestation?.ekPublic !== 'string')
      throw new Error();
  } catch {
    throw new Error(`${file} is not a pending TPM join; remove it to start the join afresh`);
  }
  if (record.siteId !== target.siteId || record.poolId !== (target.poolId ?? null)) return null;
  return {
    ekKind: record.ekKind,
    ak: { publicArea: bytes(record.ak.publicArea), privateBlob: bytes(record.ak.privateBlob) },
    nodeKey: { publicArea: bytes(record.nodeKey.publicArea), privateBlob: bytes(record.nodeKey.privateBlob) },
    csr: { csrDer: bytes(record.csr.csrDer), spkiDer: bytes(record.csr.spkiDer), csrSha256: record.csr.csrSha256 },
    attestation: record.attestation,
  };
}

export async function removePendingTpmJoin(dir: string): Promise<void> {
  await unlink(path.join(dir, TPM_PENDING_JOIN_FILE)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}
