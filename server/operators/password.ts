import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { passwordHashing } from './hash-slots';

/** Who the hash is for: the client address (the boot server's decision), when a client asked for it. */
interface HashFor {
  address?: string;
}

/** `unknown` is what a request without the boot server's header carries: no address to count against. */
const knownAddress = (address: string | undefined) => (address && address !== 'unknown' ? address : undefined);

// Every hash takes one of the process's slots (server/operators/hash-slots.ts): at most a few at once.
const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions, hashFor: HashFor) =>
  passwordHashing.run(
    knownAddress(hashFor.address),
    () =>
      new Promise<Buffer>((resolve, reject) =>
        scryptCb(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
      ),
  );

// scrypt with N=2^15, r=8: 32 MiB of memory per hash, the memory-hard cost OWASP recommends.
const N = 2 ** 15;
const R = 8;
const P = 1;
const MAXMEM = 64 * 1024 * 1024;

/** Hashes a password as `scrypt$N$r$p$salt$hash` (base64url parts). */
export async function hashPassword(password: string, hashFor: HashFor = {}): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, { N, r: R, p: P, maxmem: MAXMEM }, hashFor);
  return ['scrypt', N, R, P, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/**
 * Whether `password` is the one `stored` was made from (constant-time comparison).
 *
 * @throws PasswordHashingBusyError when the process or the client address has too many hashes at once.
 */
export async function verifyPassword(password: string, stored: string, hashFor: HashFor = {}): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(
    password,
    Buffer.from(salt, 'base64url'),
    expected.length,
    {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      maxmem: MAXMEM,
    },
    hashFor,
  );
  return timingSafeEqual(actual, expected);
}

/** A one-time password an operator can type: 20 characters from an unambiguous alphabet (~100 bits). */
export function generatePassword(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789';
  const bytes = randomBytes(20);
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}
