import { constants } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { agentErrorClass } from '../errors';

/** The most a token file may hold: a bearer is about 90 bytes; anything larger is not a token file. */
const MAX_TOKEN_FILE_BYTES = 4096;
// The bearer form of server/tokens/secret.ts; bcd checks only the shape, JoinService the rest.
const TOKEN_SHAPE = /^bcjt_[A-Za-z0-9_.-]+$/;

export class TokenInputError extends agentErrorClass('USAGE', 'TokenInputError') {}

/** The token in `text`, trimmed, or an error that never repeats what was given. */
export function parseToken(text: string, source: string): string {
  const token = text.trim();
  if (token === '') throw new TokenInputError(`No join token on ${source}`);
  if (!TOKEN_SHAPE.test(token)) throw new TokenInputError(`What ${source} holds is not a join token (bcjt_…)`);
  return token;
}

/** Reads all of standard input (at most 4 KiB kept; more is refused). */
export async function readTokenFromStdin(stdin: NodeJS.ReadableStream = process.stdin): Promise<string> {
  if ((stdin as NodeJS.ReadStream).isTTY)
    throw new TokenInputError('Give the join token on standard input (bcd join < token-file) or with --token-file');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_TOKEN_FILE_BYTES) throw new TokenInputError('Standard input holds more than a join token');
    chunks.push(Buffer.from(chunk as Buffer));
  }
  return parseToken(Buffer.concat(chunks).toString('utf8'), 'standard input');
}

/**
 * Reads `--token-file`: only a regular file (not a link), of at most 4 KiB, that its owner alone can read
 * (no group or other bits: 0600 or 0400) and that this user owns, so a token another user could read or plant
 * is refused before it is used. The checks are made on the opened descriptor, never on the path: the file is
 * opened with O_NOFOLLOW (a symbolic link swapped in after a check is refused, not followed) and O_NONBLOCK
 * (a FIFO swapped in cannot hold the open), then fstat decides, and at most 4 KiB + 1 bytes are read from it.
 */
export async function readTokenFile(file: string): Promise<string> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') throw new TokenInputError(`${file} does not exist`);
      if (error.code === 'ELOOP') throw new TokenInputError(`${file} is not a regular file (a symbolic link)`);
      throw new TokenInputError(`${file} cannot be read (${error.code})`);
    },
  );
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new TokenInputError(`${file} is not a regular file`);
    if (info.size > MAX_TOKEN_FILE_BYTES) throw new TokenInputError(`${file} is larger than ${MAX_TOKEN_FILE_BYTES} bytes`);
    if ((info.mode & 0o077) !== 0)
      throw new TokenInputError(`${file} can be read by others (mode ${(info.mode & 0o777).toString(8)}); make it 0600 or 0400`);
    if (typeof process.getuid === 'function' && info.uid !== process.getuid())
      throw new TokenInputError(`${file} is owned by another user`);
    // One byte past the limit tells a file that grew after fstat from one that is exactly 4 KiB.
    const buffer = Buffer.alloc(MAX_TOKEN_FILE_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > MAX_TOKEN_FILE_BYTES) throw new TokenInputError(`${file} is larger than ${MAX_TOKEN_FILE_BYTES} bytes`);
    return parseToken(buffer.subarray(0, length).toString('utf8'), file);
  } finally {
    await handle.close();
  }
}

/**
 * Deletes the token file after the join. The join has already succeeded and spent the token, so a file that cannot
 * be deleted is a warning, never an error: a read-only Secret volume answers EROFS, a Secret key mounted with
 * `subPath` (a bind mount of one file) EBUSY, a directory this user may not write EACCES or EPERM.
 */
export async function removeTokenFile(file: string, warn: (line: string) => void): Promise<void> {
  await unlink(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return;
    warn(`warning: could not delete ${file} (${error.code ?? 'error'}); remove it yourself`);
  });
}
