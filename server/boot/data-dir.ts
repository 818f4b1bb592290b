import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export function dataDirectory(): string {
  return path.resolve(process.env.BETTER_COMPUTE_DATA_DIR || '.data');
}

/**
 * Reads a secret kept 0600 in the data directory, generating it on first use. Returns whether it was
 * generated, so the caller can warn that production must set its own.
 */
export async function localSecret(dataDir: string, name: string): Promise<{ value: string; generated: boolean }> {
  await mkdir(dataDir, { recursive: true, mode: 0o711 });
  const file = path.join(dataDir, name);
  if (existsSync(file)) {
    await chmod(file, 0o600);
    return { value: (await readFile(file, 'utf8')).trim(), generated: false };
  }
  const value = randomBytes(32).toString('base64url');
  await writeFile(file, value + '\n', { mode: 0o600, flag: 'wx' });
  return { value, generated: true };
}
