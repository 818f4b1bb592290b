import { chmodSync, existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseToken, readTokenFile, readTokenFromStdin, removeTokenFile } from './token-input';

const TOKEN = `bcjt_jt_01jabcdefghjkmnpqrstvwxyz0.${'s'.repeat(43)}`;
const dir = mkdtempSync(path.join(tmpdir(), 'token-input-'));
const file = (name: string, content: string, mode = 0o600) => {
  const full = path.join(dir, name);
  writeFileSync(full, content, { mode });
  chmodSync(full, mode);
  return full;
};

describe('the join token', () => {
  it('takes one bcjt_ token, trimmed, and never repeats what it refuses', () => {
    expect(parseToken(`  ${TOKEN}\n`, 'stdin')).toBe(TOKEN);
    expect(() => parseToken('', 'stdin')).toThrow('No join token on stdin');
    const refusal = (() => {
      try {
        parseToken('secret-looking-value', 'stdin');
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(refusal).toMatch(/not a join token/);
    expect(refusal).not.toContain('secret-looking-value');
  });

  it('reads standard input, and refuses more than 4 KiB', async () => {
    expect(await readTokenFromStdin(Readable.from([Buffer.from(`${TOKEN}\n`)]))).toBe(TOKEN);
    await expect(readTokenFromStdin(Readable.from([Buffer.alloc(5000, 'a')]))).rejects.toThrow(/more than a join token/);
  });

  it('reads a 0600 or 0400 token file', async () => {
    expect(await readTokenFile(file('a', TOKEN))).toBe(TOKEN);
    expect(await readTokenFile(file('b', TOKEN, 0o400))).toBe(TOKEN);
  });

  it.each([
    ['group-readable', () => file('c', TOKEN, 0o640), /can be read by others/],
    ['world-readable', () => file('d', TOKEN, 0o604), /can be read by others/],
    ['larger than 4 KiB', () => file('e', 'a'.repeat(4097)), /larger than 4096/],
    ['a symbolic link', () => {
      const link = path.join(dir, 'link');
      symlinkSync(file('f', TOKEN), link);
      return link;
    }, /not a regular file/],
    ['a directory', () => dir, /not a regular file/],
  ])('refuses a token file that is %s', async (_name, make, message) => {
    await expect(readTokenFile(make())).rejects.toThrow(message);
  });

  it('deletes the token file after the join', async () => {
    const target = file('g', TOKEN);
    await removeTokenFile(target, () => {});
    expect(existsSync(target)).toBe(false);
  });
});
