import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { reservePort } from '../gateway-process';
import { haproxyConfigFor, patroniConfig, type HaMember } from './ha-postgres-config';

/**
 * A highly available PostgreSQL 15 from Debian's packages, all of it under one temporary directory on free
 * loopback ports: one etcd (the DCS), two Patroni members with synchronous replication (`synchronous_mode`),
 * and HAProxy in front, sending connections to whichever member Patroni's REST API calls the primary
 * (`GET /primary` answers 200 only there). PostgreSQL refuses to run as root: as root, every process runs as
 * the `postgres` user that the postgresql-15 package created.
 */

export type { HaMember } from './ha-postgres-config';

export interface HaPostgres {
  /** The application's URL: through HAProxy, to the current primary. */
  url: string;
  members: HaMember[];
  /** The member Patroni calls the leader now (asks each REST API), or undefined while there is none. */
  leader(): Promise<HaMember | undefined>;
  /** `patronictl list`-like: the cluster as the leader's REST API sees it (sync_standby included). */
  cluster(): Promise<{ members: Array<{ name: string; role: string; state: string; lag?: number | string }> } | null>;
  /** SIGKILL of the member's whole PostgreSQL (the postmaster and every backend), its Patroni left running. */
  killPostgres(member: HaMember): number;
  /** The whole member lost at once, as a host that dies: SIGKILL of its Patroni and of its PostgreSQL. */
  killMember(member: HaMember): number;
  stop(): Promise<void>;
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/** The postgres user's ids when running as root (PostgreSQL will not run as root), else nothing to change. */
function runAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  const ids = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = ids('-u');
  if (!Number.isInteger(uid) || uid <= 0)
    throw new Error('running as root, the failover drill needs the postgres user (postgresql-15 creates it)');
  return { uid, gid: ids('-g') };
}

function chownTree(dir: string, as: RunAs) {
  if (as.uid === undefined) return;
  chownSync(dir, as.uid, as.gid!);
  for (const entry of readdirSync(dir)) {
    const file = path.join(dir, entry);
    if (statSync(file).isDirectory()) chownTree(file, as);
    else chownSync(file, as.uid, as.gid!);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function getJson(url: string): Promise<{ status: number; body: unknown } | null> {
  try {
    const answer = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return { status: answer.status, body: await answer.json().catch(() => null) };
  } catch {
    return null;
  }
}

/** Starts the cluster and resolves once HAProxy reaches a primary that has a synchronous standby streaming. */
export async function startHaPostgres(options: { synchronous?: boolean; say?: (line: string) => void } = {}): Promise<HaPostgres> {
  const say = options.say ?? (() => {});
  const as = runAs();
  const root = mkdtempSync(path.join(tmpdir(), 'bc-ha-'));
  // The postgres user must reach the directory (mkdtemp makes it 0700 for root).
  chownTree(root, as);
  const children: ChildProcess[] = [];
  const logs = new Map<string, string[]>();
  const start = (name: string, command: string, args: string[]) => {
    const log: string[] = [];
    logs.set(name, log);
    // Its own process group, so the teardown reaches whatever it started.
    const child = spawn(command, args, {
      cwd: root,
      ...as,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOME: root, LANG: 'C.UTF-8' },
    });
    const keep = (chunk: Buffer) => log.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    children.push(child);
    return child;
  };
  const postmasterPid = (member: HaMember) => {
    const file = path.join(member.dataDir, 'postmaster.pid');
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  };
  /** The process group of the postmaster: Patroni starts it in a session of its own, its backends with it. */
  const postgresGroup = (member: HaMember) => {
    const pid = postmasterPid(member);
    if (!pid) return undefined;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid pgrp …"; comm has no spaces for postgres.
      return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);
    } catch {
      return undefined;
    }
  };
  const kill = (pid: number, signal: NodeJS.Signals) => {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  };

  const [etcdClient, etcdPeer, proxyPort] = [await reservePort(), await reservePort(), await reservePort()];
  const members: HaMember[] = [];
  for (const name of ['pg0', 'pg1']) {
    members.push({ name, pgPort: await reservePort(), apiPort: await reservePort(), dataDir: path.join(root, name, 'data'), log: [] });
  }
  const superPassword = randomBytes(12).toString('hex');
  const stop = async () => {
    const groups = members.map(postgresGroup);
    for (const group of groups) if (group) kill(-group, 'SIGKILL');
    for (const child of children) if (child.pid && child.exitCode === null && child.signalCode === null) kill(-child.pid, 'SIGKILL');
    await Promise.all(
      children.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : Promise.resolve())),
    );
    // A postmaster Patroni started after the first look (a restart during the teardown) is killed too.
    for (const group of members.map(postgresGroup)) if (group) kill(-group, 'SIGKILL');
    rmSync(root, { recursive: true, force: true });
  };

  try {
    mkdirSync(path.join(root, 'etcd'), { mode: 0o700 });
    chownTree(path.join(root, 'etcd'), as);
    start('etcd', 'etcd', [
      '--name=e0',
      `--data-dir=${path.join(root, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=e0=http://127.0.0.1:${etcdPeer}`,
      '--log-level=warn',
    ]);
    await until(async () => (await getJson(`http://127.0.0.1:${etcdClient}/health`))?.status === 200, 30_000, 'etcd to answer');

    for (const member of members) {
      const dir = path.dirname(member.dataDir);
      mkdirSync(dir, { mode: 0o700 });
      const config = patroniConfig({ member, etcdClient, synchronous: options.synchronous ?? true, password: superPassword });
      // YAML is a superset of JSON: Patroni reads this as its configuration file.
      writeFileSync(path.join(dir, 'patroni.yml'), JSON.stringify(config, null, 2), { mode: 0o600 });
      chownTree(dir, as);
    }
    // The first member bootstraps the cluster alone; the second then clones it (pg_basebackup) and streams.
    const patronis = new Map<string, ChildProcess>();
    patronis.set('pg0', start('pg0', 'patroni', [path.join(root, 'pg0', 'patroni.yml')]));
    const api = (m: HaMember, p: string) => getJson(`http://127.0.0.1:${m.apiPort}${p}`);
    await until(async () => (await api(members[0]!, '/primary'))?.status === 200, 90_000, 'pg0 to bootstrap as the primary');
    patronis.set('pg1', start('pg1', 'patroni', [path.join(root, 'pg1', 'patroni.yml')]));
    const synchronous = options.synchronous ?? true;
    await until(
      async () => (await api(members[1]!, synchronous ? '/sync' : '/replica'))?.status === 200,
      90_000,
      `pg1 to stream as the ${synchronous ? 'synchronous' : 'asynchronous'} standby`,
    );

    const haproxyConfig = haproxyConfigFor(members, proxyPort);
    writeFileSync(path.join(root, 'haproxy.cfg'), haproxyConfig);
    chownTree(root, as);
    start('haproxy', 'haproxy', ['-db', '-f', path.join(root, 'haproxy.cfg')]);
    const url = `postgresql://postgres:${superPassword}@127.0.0.1:${proxyPort}/postgres`;
    // HAProxy starts with every server up until its first check says otherwise: wait until it sends every
    // connection of a row to the primary (round robin would reach the standby among them).
    let inARow = 0;
    await until(
      async () => (inARow = (await reachesPrimary(url)) ? inARow + 1 : 0) >= 6,
      30_000,
      'HAProxy to send connections to the primary only',
    );
    for (const m of members) m.log = logs.get(m.name)!;
    say(
      `ha-postgres: etcd :${etcdClient}, ${members.map((m) => `${m.name} :${m.pgPort} (api :${m.apiPort})`).join(', ')}, haproxy :${proxyPort}`,
    );

    const killPostgres = (member: HaMember) => {
      const group = postgresGroup(member);
      if (!group) throw new Error(`${member.name} has no running postmaster`);
      // Patroni starts PostgreSQL in a session of its own (setsid): one kill of that group reaches the
      // postmaster and every backend at once, as a crash of the server would.
      process.kill(-group, 'SIGKILL');
      return postmasterPid(member)!;
    };
    return {
      url,
      members,
      async leader() {
        for (const m of members) if ((await api(m, '/leader'))?.status === 200) return m;
        return undefined;
      },
      async cluster() {
        for (const m of members) {
          const answer = await api(m, '/cluster');
          if (answer?.status === 200) return answer.body as Awaited<ReturnType<HaPostgres['cluster']>>;
        }
        return null;
      },
      killPostgres,
      killMember(member) {
        // Patroni first, so it cannot react to its PostgreSQL's death; nobody then releases the leader key.
        process.kill(-patronis.get(member.name)!.pid!, 'SIGKILL');
        return killPostgres(member);
      },
      stop,
    };
  } catch (error) {
    const tail = [...logs].map(([name, lines]) => `--- ${name}\n${lines.slice(-30).join('\n')}`).join('\n');
    await stop();
    throw new Error(`${(error as Error).message}\n${tail}`, { cause: error });
  }
}

/** Whether a connection to `url` lands on a primary (a server not in recovery). */
async function reachesPrimary(url: string): Promise<boolean> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery')).rows[0]!.recovery === false;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  for (const start = Date.now(); Date.now() - start < timeoutMs; await sleep(250)) if (await check()) return;
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
}
