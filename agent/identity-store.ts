import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, link, mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/** What a joined agent keeps: its key and the identity JoinService issued for it. */
export interface NodeIdentity {
  /** PKCS#8 PEM of the node key, or for a key held in the TPM its `bcd-tpm-key v1` blob (agent/tpm/keys.ts). */
  readonly privateKeyPem: string;
  /** b64 DER, leaf first, as in the join answer. */
  readonly certificateChain: readonly string[];
  readonly nodeId: string;
  readonly siteId: string;
  readonly trustDomain: string;
  readonly role: string;
}

/** The node key file in the data directory (PKCS#8 PEM, 0600). */
export const NODE_KEY_FILE = 'node.key';
/** The identity record in the data directory (0600). */
export const IDENTITY_FILE = 'identity.json';
/**
 * The TPM attestation key of a `tpm` join (a `bcd-tpm-key v1` blob, 0600): the AK its certificate names, which
 * every renewal's key attestation must be made with (docs/tpm-attestation.md).
 */
export const AK_KEY_FILE = 'ak.key';

/**
 * Every file of an identity that `--reset` moves aside: the pair, the `.previous` pair a renewal keeps
 * (agent/renew/identity.ts, PREVIOUS_SUFFIX), and the next key and journal joining.md names, so nothing of
 * the old identity stays where a later load could pair it with the new one.
 */
const RESET_FILES: readonly string[] = [
  IDENTITY_FILE,
  NODE_KEY_FILE,
  `${IDENTITY_FILE}.previous`,
  `${NODE_KEY_FILE}.previous`,
  `${NODE_KEY_FILE}.next`,
  AK_KEY_FILE,
  'journal.db',
];

const exists = (file: string) =>
  access(file, constants.F_OK).then(
    () => true,
    () => false,
  );

/** Writes `content` to a new 0600 file beside `file`, flushed to disk; returns its path. */
export async function writeTemporary(file: string, content: string): Promise<string> {
  const temporary = `${file}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temporary;
}

/**
 * Moves a file into place with link(2) rather than rename(2): it fails with EEXIST instead of overwriting,
 * so two agents racing on one data directory cannot both believe they wrote the identity.
 */
async function install(temporary: string, file: string): Promise<void> {
  try {
    await link(temporary, file);
  } finally {
    await unlink(temporary).catch(() => {});
  }
}

/**
 * Stores a joined agent's identity in `dir` (made 0700, whether it is created or already exists): `node.key` (the PKCS#8 key) and
 * `identity.json` (node, site, trust domain, role and the certificate chain), both 0600 and each written
 * atomically (a flushed temporary file, then linked into place), the key first (and a TPM join's `ak.key`
 * next) so an identity never names a key that is not on disk. An existing `identity.json` or `node.key` is never overwritten unless `reset`
 * is set; every file of the old identity ({@link RESET_FILES}) is then kept as `<name>.reset-<UTC time>`, as
 * `bcd join --reset` does.
 *
 * @throws Error when an identity exists and `reset` is not set.
 */
export async function writeIdentity(
  dir: string,
  identity: NodeIdentity,
  options: { reset?: boolean; now?: Date; /** `ak.key`'s text, for a TPM-held identity. */ akKey?: string } = {},
): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode applies only to a directory it creates (and passes through the umask): a directory that
  // already existed, say 0755 from a package, would expose the key's name and the identity to other users.
  await chmod(dir, 0o700);
  const keyFile = path.join(dir, NODE_KEY_FILE);
  const identityFile = path.join(dir, IDENTITY_FILE);
  const present = (await Promise.all([exists(identityFile), exists(keyFile)])).some(Boolean);
  if (present && !options.reset) {
    throw new Error(`An identity already exists in ${dir}; join again with reset to replace it`);
  }
  const stamp = (options.now ?? new Date())
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  // A second reset within the same second must not rename over the first one's files: those are kept too.
  let suffix = `.reset-${stamp}`;
  for (let n = 1; (await Promise.all(RESET_FILES.map((name) => exists(path.join(dir, name + suffix))))).some(Boolean); n++)
    suffix = `.reset-${stamp}-${n}`;
  for (const file of RESET_FILES.map((name) => path.join(dir, name))) {
    await rename(file, file + suffix).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  const temporaryKey = await writeTemporary(keyFile, identity.privateKeyPem);
  await install(temporaryKey, keyFile);
  if (options.akKey !== undefined)
    await install(await writeTemporary(path.join(dir, AK_KEY_FILE), options.akKey), path.join(dir, AK_KEY_FILE));
  const temporaryIdentity = await writeTemporary(identityFile, identityRecordText(identity));
  await install(temporaryIdentity, identityFile);
  await syncDirectory(dir);
}

/** The text of `identity.json`: everything but the key. */
export function identityRecordText(identity: NodeIdentity): string {
  const record = {
    version: 1,
    nodeId: identity.nodeId,
    siteId: identity.siteId,
    trustDomain: identity.trustDomain,
    role: identity.role,
    certificateChain: [...identity.certificateChain],
  };
  return `${JSON.stringify(record, null, 2)}\n`;
}

/** Flushes the directory entry so the renames survive a crash. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
