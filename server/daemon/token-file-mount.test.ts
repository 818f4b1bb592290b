import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { principalOf, type Principal } from '../authz/principal';
import { loadPki } from '../pki/bundle/store';
import { installPins } from '../pki/pins-summary';
import { createJoinToken } from '../tokens/join-tokens';

// `bcd join --token-file` with the token on a truly read-only mount, as Kubernetes presents a Secret: a whole
// volume (a tmpfs mounted read-only) or one key of it with `subPath` (a single file bind-mounted read-only over
// a path in a writable directory). The built bcd joins inside a mount namespace of its own (`unshare -m`, as
// root), so the mounts exist only for that process; its failure to delete the file is a warning, not an error.

const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let pool: { id: string; ownerTenantId: string };
let pinArgs: string[];
let tokens = 0;

beforeAll(async () => {
  started = await startBcdServer('token_file_mount', secret);
  ({ bcd, database, server } = started);
  pool = await defaultPool(database.db);
  admin = principalOf('local', 'token-file-mount-test', [[pool.ownerTenantId, 'admin']]);
  const pins = installPins(await loadPki(database.db, secret));
  pinArgs = [
    '--serving-ca-pin',
    pins.servingCaPin,
    '--join-signing-pin',
    pins.joinSigningKeyPin,
    '--join-encryption-pin',
    pins.joinEncryptionKeyPin,
  ];
}, 300_000);

afterAll(async () => {
  await started?.stop();
});

const newToken = async () =>
  (
    await createJoinToken(database.db, admin, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      allowReclaim: false,
      idempotencyKey: `token-file-mount-${++tokens}`,
      maxUses: 1,
    })
  ).token!;

// Runs in the new mount namespace: mounts the Secret at $dir the way `kind` says, proves it read-only, then
// becomes bcd reading $dir/$name. The token travels in the environment of this shell only; bcd gets it from the
// file. `linked` is the layout Kubernetes' atomic writer makes: `token -> ..data/token`, `..data -> ..<time>`.
const MOUNT_AND_JOIN = `
set -eu
bcd=$1 dir=$2 kind=$3 name=$4
shift 4
mkdir -p "$dir"
if [ "$kind" = volume ]; then
  mount -t tmpfs -o size=64k,mode=0755 bcd-secret "$dir"
  printf '%s\\n' "$TOKEN" >"$dir/token"
  chmod 0400 "$dir/token"
  mount -o remount,ro "$dir"
elif [ "$kind" = linked ]; then
  mount -t tmpfs -o size=64k,mode=0755 bcd-secret "$dir"
  mkdir "$dir/..2026_12_07_10_00_00.000000001"
  printf '%s\\n' "$TOKEN" >"$dir/..2026_12_07_10_00_00.000000001/token"
  chmod 0400 "$dir/..2026_12_07_10_00_00.000000001/token"
  ln -s ..2026_12_07_10_00_00.000000001 "$dir/..data"
  ln -s ..data/token "$dir/token"
  mount -o remount,ro "$dir"
else
  mount -t tmpfs -o size=64k,mode=0755 bcd-pod "$dir"
  mkdir "$dir/.secret"
  mount -t tmpfs -o size=64k,mode=0755 bcd-secret "$dir/.secret"
  printf '%s\\n' "$TOKEN" >"$dir/.secret/token"
  chmod 0400 "$dir/.secret/token"
  mount -o remount,ro "$dir/.secret"
  : >"$dir/token"
  mount --bind "$dir/.secret/token" "$dir/token"
  mount -o remount,ro,bind "$dir/token"
fi
unset TOKEN
# Root writes through file modes: only a read-only mount refuses these.
if (printf x >>"$dir/token") 2>/dev/null; then
  echo "the token file is writable" >&2
  exit 97
fi
if [ "$kind" != subPath ] && touch "$dir/probe" 2>/dev/null; then
  echo "the Secret volume is writable" >&2
  exit 97
fi
exec "$bcd" join "$@" --token-file "$dir/$name"
`;

function joinFromSecret(kind: 'volume' | 'subPath' | 'linked', root: string, token: string, name = 'token') {
  const dir = path.join(root, 'run/secrets/bcd');
  return run(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', MOUNT_AND_JOIN, 'sh', bcd.binary, dir, kind, name, '--server', server.url, ...pinArgs],
    { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', BCD_ROOT: root, TOKEN: token } as unknown as NodeJS.ProcessEnv },
  );
}

describe('bcd join --token-file on a read-only Secret mount', () => {
  it.each([
    ['a Secret volume (tmpfs, read-only)', 'volume', 'token', 'EROFS'],
    ['a Secret key mounted with subPath (one file bind-mounted read-only)', 'subPath', 'token', 'EBUSY'],
    ["a Secret volume's ..data/<key> (the atomic writer's links, read-only)", 'linked', '..data/token', 'EROFS'],
  ] as const)('joins from %s and warns that it could not delete the file', { timeout: 120_000 }, async (_name, kind, name, code) => {
    const root = newMachineRoot();
    const token = await newToken();
    const result = await joinFromSecret(kind, root, token, name);
    expect(result.code, result.stderr).toBe(0);
    const file = path.join(root, 'run/secrets/bcd', name);
    expect(result.stdout).toMatch(/^joined: node \S+ in site /);
    expect(result.stderr.split('\n')).toContain(`warning: could not delete ${file} (${code}); remove it yourself`);
    expect(result.stdout + result.stderr).not.toContain(token);
    const { nodeId } = JSON.parse(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')) as { nodeId: string };
    expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ poolId: pool.id });
    expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: token.slice(5).split('.')[0]! } })).toMatchObject({
      usesLeft: 0,
    });
  });

  it("refuses the key's own path in a Secret volume (a symbolic link) before the token is spent", { timeout: 120_000 }, async () => {
    const root = newMachineRoot();
    const token = await newToken();
    const result = await joinFromSecret('linked', root, token);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`bcd: ${path.join(root, 'run/secrets/bcd/token')} is not a regular file (a symbolic link)`);
    expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: token.slice(5).split('.')[0]! } })).toMatchObject({
      usesLeft: 1,
    });
  });
});
