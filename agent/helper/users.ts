import { readFile } from 'node:fs/promises';

export interface SystemUser {
  name: string;
  uid: number;
  gid: number;
}

/**
 * The `[helper]` user from `/etc/passwd`. Node has no
 * getpwnam; the install script creates the user with useradd, which writes this file.
 *
 * @returns null when there is no such user.
 */
export async function lookupSystemUser(name: string, passwd = '/etc/passwd'): Promise<SystemUser | null> {
  const text = await readFile(passwd, 'utf8');
  for (const line of text.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined && /^\d+$/.test(uid) && /^\d+$/.test(gid))
      return { name, uid: Number(uid), gid: Number(gid) };
  }
  return null;
}

/** {@link lookupSystemUser}, failing with what to do when the user is missing. */
export async function requireSystemUser(name: string): Promise<SystemUser> {
  const user = await lookupSystemUser(name);
  if (!user) throw new Error(`there is no user ${name} ([helper] user in config.toml): create it (useradd --system ${name})`);
  return user;
}
