import path from 'node:path';

/**
 * Where bcd keeps its files. `BCD_ROOT` prefixes every default path; it exists for tests, which install into a
 * directory instead of `/`, and is documented as such.
 */
export function bcdPaths(env: NodeJS.ProcessEnv = process.env) {
  const root = env.BCD_ROOT ? path.resolve(env.BCD_ROOT) : '/';
  return {
    config: path.join(root, 'etc/bcd/config.toml'),
    identityDir: path.join(root, 'var/lib/bcd'),
  };
}

/** The JoinService encryption key lives beside config.toml. */
export const joinKeyPathFor = (configPath: string) => path.join(path.dirname(configPath), 'join-encryption.jwk');
