import path from 'node:path';

/** The PostgreSQL 15 binaries of Debian's postgresql-15 package. */
const PG_BIN = process.env.BETTER_COMPUTE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * Patroni's timings. A crashed primary is failed over at once (`primary_start_timeout: 0`: Patroni demotes it
 * instead of restarting it in place, when a synchronous standby is there to take over); its loop runs every
 * second and the leader key lives 10 s, so a whole member that dies is replaced within about 10 s.
 */
const DCS = { ttl: 10, loop_wait: 1, retry_timeout: 4, maximum_lag_on_failover: 1_048_576, primary_start_timeout: 0 };

export interface HaMember {
  name: string;
  pgPort: number;
  apiPort: number;
  dataDir: string;
  log: string[];
}

/** One member's Patroni configuration (written as JSON, which YAML reads), on etcd's v3 API. */
export function patroniConfig(options: { member: HaMember; etcdClient: number; synchronous: boolean; password: string }) {
  const { member, password } = options;
  const dir = path.dirname(member.dataDir);
  return {
    scope: 'better-compute',
    namespace: '/drill/',
    name: member.name,
    log: { level: 'INFO' },
    restapi: { listen: `127.0.0.1:${member.apiPort}`, connect_address: `127.0.0.1:${member.apiPort}` },
    etcd3: { hosts: [`127.0.0.1:${options.etcdClient}`] },
    bootstrap: {
      dcs: {
        ...DCS,
        synchronous_mode: options.synchronous,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: { wal_log_hints: 'on', max_connections: 200, password_encryption: 'scram-sha-256' },
        },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C' }, 'data-checksums'],
    },
    postgresql: {
      listen: `127.0.0.1:${member.pgPort}`,
      connect_address: `127.0.0.1:${member.pgPort}`,
      data_dir: member.dataDir,
      bin_dir: PG_BIN,
      pgpass: path.join(dir, 'pgpass'),
      authentication: {
        superuser: { username: 'postgres', password },
        replication: { username: 'replicator', password },
        rewind: { username: 'postgres', password },
      },
      pg_hba: ['local all all trust', 'host replication replicator 127.0.0.1/32 scram-sha-256', 'host all all 127.0.0.1/32 scram-sha-256'],
      parameters: { unix_socket_directories: dir },
    },
    watchdog: { mode: 'off' },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
}

/** HAProxy in front of the members: each connection goes to the one whose Patroni answers GET /primary 200. */
export function haproxyConfigFor(members: HaMember[], port: number): string {
  return [
    'global',
    '    maxconn 1000',
    'defaults',
    '    mode tcp',
    '    retries 2',
    '    timeout client 30m',
    '    timeout server 30m',
    '    timeout connect 2s',
    '    timeout check 2s',
    'listen postgres',
    `    bind 127.0.0.1:${port}`,
    '    option httpchk GET /primary',
    '    http-check expect status 200',
    // Every 500 ms, one failed check takes a member out and one good one puts it in; the sessions to a
    // member marked down are cut, so no client stays on a demoted primary.
    '    default-server inter 500ms fall 1 rise 1 on-marked-down shutdown-sessions',
    ...members.map((m) => `    server ${m.name} 127.0.0.1:${m.pgPort} maxconn 400 check port ${m.apiPort}`),
    '',
  ].join('\n');
}
