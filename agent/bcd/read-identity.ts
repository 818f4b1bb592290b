import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { IDENTITY_FILE, NODE_KEY_FILE } from '../identity-store';

/** identity.json as writeIdentity stores it. */
interface StoredIdentity {
  nodeId: string;
  siteId: string;
  trustDomain: string;
  role: string;
  certificateChain: string[];
}

/** The stored identity, or null when the data directory holds neither file. Throws when it is unreadable. */
export async function readStoredIdentity(dir: string): Promise<{ identity: StoredIdentity; keyPem: string } | null> {
  const read = (name: string) =>
    readFile(path.join(dir, name), 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
  const [identityText, keyPem] = await Promise.all([read(IDENTITY_FILE), read(NODE_KEY_FILE)]);
  if (identityText === null && keyPem === null) return null;
  if (identityText === null || keyPem === null) {
    throw new Error(
      `${dir} holds ${identityText === null ? NODE_KEY_FILE : IDENTITY_FILE} but not ${identityText === null ? IDENTITY_FILE : NODE_KEY_FILE}`,
    );
  }
  return { identity: JSON.parse(identityText) as StoredIdentity, keyPem };
}
