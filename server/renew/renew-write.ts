import type pg from 'pg';
import { isUniqueViolation } from '../db/errors';
import { logError } from '../log';
import { recordFirstContact } from '../nodes/first-contact';
import type { IssuedNodeCertificate } from '../pki/issuance/node-certificate';
import { LOCK_NODES, PRUNE_PROOFS, WRITE_RENEWALS } from './renew-sql';
import { RENEW_REPLAY_WINDOW_SECONDS } from '../../protocol/renew-wire';

/** A presented leaf's node_certs row and its node, as SELECT_PRESENTED_LEAVES reads them. */
export interface LeafRow {
  ord: number;
  serial: string;
  node_id: string;
  cert_generation: number;
  role: string;
  /** The command kinds the certificate allows (null: any); a renewal copies them to the new certificate. */
  allowed_kinds: string[] | null;
  is_revoked: boolean;
  is_expired: boolean;
  node_generation: number;
  state: string;
  tenant_id: string;
  site_id: string;
  now_seconds: number;
  /** `ramdisk` leaves only: when the identity was first issued (Unix seconds), else null. */
  first_issued_seconds: number | null;
  /** `ramdisk` leaves only: the site's stored discovery settings (discoverySettings), else null. */
  site_discovery: unknown;
  /** The node's certificates written in the last hour (the per-node renewal limit counts them). */
  issued_last_hour: number;
}

/** A renewal that passed every check that needs no lock, with its certificate signed. */
export interface Renewal {
  row: LeafRow;
  cert: IssuedNodeCertificate;
  /** The pin of the node CA that issued `cert` (`node_certs.ca_pin`). */
  caPin: string;
  spkiSha256: Buffer;
  proof: Buffer;
}

interface WrittenRow {
  live: boolean;
  replayed: boolean;
  key_used: boolean;
  over_limit: boolean;
  fresh: boolean;
  issued: boolean;
}

export type WriteOutcome = 'issued' | 'revoked' | 'replay' | 'key-reused' | 'rate-limited' | 'key-raced' | 'failed';

/** The refusals the write decides, in the order the checks apply (the reason, then the event's detail). */
export const WRITE_REFUSALS: Record<Exclude<WriteOutcome, 'issued' | 'failed'>, [string, string]> = {
  revoked: ['revoked', 'the identity was revoked, replaced or retired meanwhile'],
  replay: ['replay', `the same proof was used in the last ${RENEW_REPLAY_WINDOW_SECONDS} seconds`],
  'key-reused': ['key-reused', 'the CSR key was certified before'],
  'rate-limited': ['rate-limited', 'the node reached its certificates per hour meanwhile'],
  'key-raced': ['key-reused', 'the CSR key was certified concurrently'],
};

function writeOutcome(row: WrittenRow): WriteOutcome {
  if (!row.live) return 'revoked';
  if (row.replayed) return 'replay';
  if (row.key_used) return 'key-reused';
  if (row.over_limit) return 'rate-limited';
  // Not recorded though unused when the statement began: another instance used the proof meanwhile.
  if (!row.fresh) return 'replay';
  return row.issued ? 'issued' : 'key-raced';
}

/** COMMIT itself failed: whether the group was written is unknown. */
class CommitFailed extends Error {
  constructor(readonly cause: unknown) {
    super('COMMIT failed');
  }
}

/**
 * Writes groups of renewals (GroupRunner's runs): one transaction, the nodes' locks, one statement for every
 * renewal's proof and certificate, the first contacts, one durable commit.
 */
export class RenewalWriter {
  private calls = 0;

  constructor(
    private readonly pool: pg.Pool,
    /** Certificates one node may be issued per hour (renew-limit.ts). */
    private readonly perNodePerHour: number,
  ) {}

  /**
   * Writes a group; when its transaction fails before COMMIT, writes its renewals one by one (a unique
   * violation of a lone renewal is its key certified concurrently by another instance). A failed COMMIT is
   * never retried: the group may have been written.
   */
  async write(renewals: Renewal[]): Promise<WriteOutcome[]> {
    try {
      return await this.writeOnce(renewals);
    } catch (error) {
      if (error instanceof CommitFailed) {
        logError('renewal commit failed', error.cause);
        return renewals.map(() => 'failed' as const);
      }
      if (renewals.length > 1) {
        const outcomes: WriteOutcome[] = [];
        for (const renewal of renewals) outcomes.push(...(await this.write([renewal])));
        return outcomes;
      }
      if (isUniqueViolation(error)) return ['key-raced'];
      logError('renewal failed', error);
      return ['failed'];
    }
  }

  private async writeOnce(renewals: Renewal[]): Promise<WriteOutcome[]> {
    const client = await this.pool.connect();
    try {
      // BEGIN and the nodes' row locks in one round trip (a simple query cannot take parameters; the ids are
      // JoinService's own, read from the database, and escaped all the same).
      const ids = [...new Set(renewals.map((r) => r.row.node_id))].sort();
      let outcomes: WriteOutcome[];
      try {
        // Inside the try: a lock that fails leaves the transaction open and aborted, and ROLLBACK ends it
        // before the connection returns to the pool.
        await client.query(`BEGIN; ${LOCK_NODES.replace('$ids', ids.map((id) => client.escapeLiteral(id)).join(', '))}`);
        const rows = (
          await client.query<WrittenRow>({
            name: 'renew-write',
            text: WRITE_RENEWALS,
            values: [
              renewals.map((r) => r.row.serial),
              renewals.map((r) => r.proof),
              renewals.map((r) => r.row.node_id),
              renewals.map((r) => r.cert.serialHex),
              renewals.map((r) => r.row.role),
              renewals.map((r) => r.spkiSha256),
              renewals.map((r) => r.cert.der),
              renewals.map((r) => r.cert.notBefore),
              renewals.map((r) => r.cert.notAfter),
              this.perNodePerHour,
              renewals.map((r) => r.caPin),
            ],
          })
        ).rows;
        outcomes = rows.map(writeOutcome);
        const connected = [...new Set(renewals.filter((_, i) => outcomes[i] === 'issued').map((r) => r.row.node_id))];
        if (connected.length) await recordFirstContact(client, connected);
        const before = this.calls;
        this.calls += renewals.length;
        if (Math.floor(before / 64) !== Math.floor(this.calls / 64)) await client.query(PRUNE_PROOFS);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
      try {
        await client.query('COMMIT');
      } catch (error) {
        throw new CommitFailed(error);
      }
      return outcomes;
    } finally {
      client.release();
    }
  }
}
