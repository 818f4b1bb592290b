import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Runs `openssl` with `files` written to a private temporary directory; `{name}` in an argument becomes that
 * file's path. Test-only: it is how the tests check our bytes against an independent implementation.
 */
export function openssl(args: string[], files: Record<string, string | Uint8Array> = {}, input?: Uint8Array): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'bc-pki-'));
  try {
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content, { mode: 0o600 });
    const resolved = args.map((arg) => arg.replace(/\{([\w.-]+)\}/g, (_, name: string) => path.join(dir, name)));
    return execFileSync('openssl', resolved, { input, stdio: ['pipe', 'pipe', 'pipe'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
