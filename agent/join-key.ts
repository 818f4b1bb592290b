import { readFile } from 'node:fs/promises';
import { pinOfEncryptionJwk } from './trust/trust-set';
import type { EncryptionJwk } from './seal-token';

/** Where to find the JoinService encryption key, and the pin it must match. */
interface LoadJoinEncryptionKeyOptions {
  /** `join-encryption.jwk`, written by the install script; skipped when absent. */
  readonly jwkPath?: string;
  /** `join_encryption_key_pin`: `sha256/` + base64 of the SHA-256 of the key's SPKI DER. */
  readonly pin: string;
  /** The control plane's origin, for the well-known fallback (for example `https://compute.example.com`). */
  readonly serverUrl?: string;
  readonly basePath?: string;
  readonly fetch?: typeof fetch;
  /**
   * bcd's rule (joining.md, "The join key and its fallback"): a `join-encryption.jwk` that is present but does
   * not match the pin fails instead of falling back, since the install wrote file and pin together; after a
   * key rotation the install script is run again. Only a missing file falls back to the well-known document.
   */
  readonly refuseMismatchedFile?: boolean;
}

/** The pinned JoinService encryption key and where it came from. */
interface JoinEncryptionKey {
  readonly jwk: EncryptionJwk;
  readonly source: 'file' | 'well-known';
}

/**
 * Finds the JoinService encryption key to seal a token to. `join-encryption.jwk` is used only when its
 * SPKI pin equals `pin`; when it is missing or does not match (the key was rotated), the key is taken from
 * `GET {serverUrl}{basePath}/.well-known/better-compute` (`join.encryptionJwk`), again only when it matches
 * the pin, so the fetch needs no trust in the transport. `basePath` defaults to `/api/compute`.
 *
 * @throws Error saying why no pinned key was found.
 */
export async function loadJoinEncryptionKey(options: LoadJoinEncryptionKeyOptions): Promise<JoinEncryptionKey> {
  const { jwkPath, pin, serverUrl, basePath = '/api/compute' } = options;
  let fileProblem = 'no join-encryption.jwk was given';
  if (jwkPath) {
    try {
      const found = pinOfEncryptionJwk(JSON.parse(await readFile(jwkPath, 'utf8')));
      if (found?.pin === pin) return { jwk: found.jwk, source: 'file' };
      fileProblem = found ? `${jwkPath} does not match join_encryption_key_pin` : `${jwkPath} is not a public P-256 JWK`;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      fileProblem = code === 'ENOENT' ? `${jwkPath} does not exist` : `${jwkPath} cannot be read (${(error as Error).message})`;
    }
    if (options.refuseMismatchedFile && fileProblem !== `${jwkPath} does not exist`) {
      throw new Error(
        `${fileProblem}; after a join key rotation, generate the install script again and rerun it (it rewrites the key file and the pins)`,
      );
    }
  }
  if (!serverUrl) {
    throw new Error(
      `No join encryption key matches join_encryption_key_pin: ${fileProblem}, and no server URL to fetch the well-known document from`,
    );
  }

  const url = `${serverUrl.replace(/\/+$/, '')}${basePath}/.well-known/better-compute`;
  let document: unknown;
  try {
    const response = await (options.fetch ?? fetch)(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(15_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    document = await response.json();
  } catch (error) {
    throw new Error(
      `No join encryption key matches join_encryption_key_pin: ${fileProblem}, and ${url} could not be read (${(error as Error).message})`,
      { cause: error },
    );
  }
  const join = (document as { join?: { encryptionJwk?: unknown } } | null)?.join;
  if (!join) throw new Error(`${url} publishes no join section: the server has no JoinService keys configured`);
  const found = pinOfEncryptionJwk(join.encryptionJwk);
  if (!found) throw new Error(`${url} publishes no usable join.encryptionJwk`);
  if (found.pin !== pin) {
    throw new Error(
      `The join encryption key published at ${url} does not match join_encryption_key_pin (${fileProblem}); regenerate the pins from the current PKI bundle`,
    );
  }
  return { jwk: found.jwk, source: 'well-known' };
}
