import { tokenSecretMatches } from '../tokens/secret';

/**
 * The row a one-time link token names (an invitation's, an SSO link's), when the token's secret matches the
 * row's hash and the row says it is still usable; else null. `pattern` captures the row's id, then the secret;
 * `read` answers the row of an id. A token that does not parse reads nothing.
 */
export async function usableByToken<R extends { secret_hash: Uint8Array; usable: boolean }>(
  token: string,
  pattern: RegExp,
  read: (id: string) => Promise<R | undefined>,
): Promise<R | null> {
  const match = pattern.exec(token.trim());
  if (!match) return null;
  const row = await read(match[1]!);
  return row && tokenSecretMatches(row.secret_hash, match[2]!) && row.usable ? row : null;
}
