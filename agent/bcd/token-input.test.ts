import { spawn } from 'node:child_process';
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
    [
      'a symbolic link',
      () => {
        const link = path.join(dir, 'link');
        symlinkSync(file('f', TOKEN), link);
        return link;
      },
      /not a regular file/,
    ],
    ['a directory', () => dir, /not a regular file/],
  ])('refuses a token file that is %s', async (_name, make, message) => {
    await expect(readTokenFile(make())).rejects.toThrow(message);
  });

  it('refuses a file of 10 MiB after reading at most 4 KiB + 1 of it', async () => {
    await expect(readTokenFile(file('big', `${TOKEN}\n${'a'.repeat(10 << 20)}`))).rejects.toThrow(/larger than 4096/);
  });

  it(
    'never reads through a symbolic link swapped in after the checks (the file flips while bcd reads it)',
    { timeout: 30_000 },
    async () => {
      // A root bcd reading a path in a directory another user controls: the path flips between a 0600 file holding
      // the real token and a link to that user's 0644 file holding theirs. Checking the path and then opening it
      // reads theirs once the flip lands between the two; checks on the opened descriptor never do.
      const race = mkdtempSync(path.join(tmpdir(), 'token-race-'));
      const good = path.join(race, 'good');
      const planted = path.join(race, 'planted');
      const target = path.join(race, 'token');
      const PLANTED = `bcjt_jt_01jplantedplantedplantedplan.${'p'.repeat(43)}`;
      writeFileSync(good, TOKEN, { mode: 0o600 });
      writeFileSync(planted, PLANTED, { mode: 0o644 });
      chmodSync(planted, 0o644);
      writeFileSync(target, TOKEN, { mode: 0o600 });
      const flipper = spawn(
        process.execPath,
        [
          '-e',
          `
      const fs = require('node:fs');
      const [good, planted, target] = process.argv.slice(1);
      for (;;) {
        try { fs.symlinkSync(planted, target + '.l'); } catch {}
        fs.renameSync(target + '.l', target);
        try { fs.linkSync(good, target + '.r'); } catch {}
        fs.renameSync(target + '.r', target);
      }`,
          good,
          planted,
          target,
        ],
        { stdio: 'ignore' },
      );
      try {
        const seen = { token: 0, link: 0, planted: 0 };
        const until = Date.now() + 4000;
        while (Date.now() < until && seen.token + seen.link < 4000) {
          const result = await readTokenFile(target).catch((error: Error) => error);
          if (result === TOKEN) seen.token++;
          else if (result === PLANTED) seen.planted++;
          else if (result instanceof Error && /symbolic link|does not exist/.test(result.message)) seen.link++;
          else throw new Error(`readTokenFile answered something else: ${String(result).slice(0, 40)}`);
        }
        expect(seen.planted).toBe(0);
        // The flip really raced the reads: both shapes of the path were met.
        expect(seen.token).toBeGreaterThan(0);
        expect(seen.link).toBeGreaterThan(0);
      } finally {
        flipper.kill('SIGKILL');
      }
    },
  );

  it('deletes the token file after the join', async () => {
    const target = file('g', TOKEN);
    await removeTokenFile(target, () => {});
    expect(existsSync(target)).toBe(false);
  });

  it('warns, never fails, when the file cannot be deleted once the join succeeded (whatever the errno)', async () => {
    // A directory where the file was: unlink answers EISDIR, a code the old list of "read-only" errors left out.
    const target = mkdtempSync(path.join(dir, 'not-a-file-'));
    const warnings: string[] = [];
    await removeTokenFile(target, (line) => warnings.push(line));
    expect(warnings).toEqual([`warning: could not delete ${target} (EISDIR); remove it yourself`]);
    expect(existsSync(target)).toBe(true);
  });
});
