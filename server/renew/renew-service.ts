import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import type pg from 'pg';
import { readLeafNames } from '../../protocol/certificate-names';
import { JoinRefusal } from '../join/crypto/refusal';
import { parseCsr } from '../join/crypto/csr';
import { JOIN_FAILED, joinNotConfigured, type JoinAnswer } from '../../protocol/join-wire';
import { logError } from '../log';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { joinAnswerTrust, signTrusted, trustStateOf, type TrustState } from '../pki/rotation/trust-state';
import {
  certificateTtlFor,
  issueNodeCertificate,
  MAX_NODE_CERT_TTL_SECONDS,
  type NodeCertificateRole,
} from '../pki/issuance/node-certificate';
import { P256_SPKI_PREFIX } from '../../protocol/p256';
import { checkRenewal, renewalLife } from '../join/attestors';
import { recordRenewRefusal, type RenewRefusalLimit } from './refusals';
import { parseRenewBody, RenewRefusal } from './request';
import { GroupRunner } from './group';
import { renewalsPerNodePerHour } from './renew-limit';
import { SELECT_PRESENTED_LEAVES } from './renew-sql';
import { RenewalWriter, WRITE_REFUSALS, type LeafRow, type Renewal, type WriteOutcome } from './renew-write';
import { vouchedPeer } from '../vouching/vouch';
import { recordRenewal, type ApiMetrics } from '../metrics/api-metrics';
import { RENEW_CLOCK_SKEW_SECONDS, RENEW_REFUSED, renewPopMessage } from '../../protocol/renew-wire';

interface RenewServiceOptions {
  pool: pg.Pool;
  /**
   * JoinService's keys and the serving CA pin; null when absent. With a rotation under way, its trust state:
   * gateway vouching may chain to any trusted serving CA, and the answer is signed by every trusted signing key.
   */
  loadRuntime: () => Promise<{ crypto: JoinCrypto; servingCaPin: string; trust?: TrustState } | null>;
  loadRootTenantId: () => Promise<string | null>;
  certTtlSeconds?: number;
  refusalLimit?: RenewRefusalLimit;
  /** The most renewals one group reads or commits together (128). */
  maxGroup?: number;
  /** Where renewals are counted (the composition root's registry); none by default. */
  metrics?: ApiMetrics;
  /** Certificates one node may be issued per hour (renew-limit.ts); derived from `certTtlSeconds` by default. */
  renewalsPerHour?: number;
}

/** What the HTTP layer hands over: the body, the gateway's headers and the path the call was made to. */
interface RenewCall {
  body: Buffer | null;
  vouch: string | undefined;
  peer: string | undefined;
  path: string;
}

/** A refusal with what the event needs: the node once known, and whether the caller proved its key. */
class Refused extends Error {
  constructor(
    readonly refusal: RenewRefusal,
    readonly row: LeafRow | null,
    readonly proven: boolean,
  ) {
    super('Renew refused');
  }
}

const sha256 = (...parts: Uint8Array[]) => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

function publicKeyOf(spkiDer: Buffer): KeyObject {
  const point = spkiDer.subarray(P256_SPKI_PREFIX.length);
  return createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: point.toString('base64url', 1, 33), y: point.toString('base64url', 33, 65) },
    format: 'jwk',
  });
}

/**
 * Renew (protocol.md "Renew", joining.md "Renewal"): issues a node's next certificate when every rule holds,
 * checked in this order: gateway vouching for a peer certificate; the body; the presented leaf is byte for
 * byte a `node_certs` row, unrevoked, unexpired, of the node's current generation, the node not retired; the
 * vouched peer is that leaf; `clientTime` within 60 s of the database's time; `popSig` by the leaf's key over
 * the protocol's bytes (the CSR's hash); an identity within the total life its attestor gives it (renewalLife: a
 * `ramdisk`'s, which also caps the new certificate's notAfter); the CSR; the attestors' checks of the leaf's
 * statements (checkRenewal: a key attestation when the leaf names a TPM AK); then, under the node's row
 * lock, the leaf again (a concurrent revokeIdentity wins), the proof unused for RENEW_REPLAY_WINDOW_SECONDS (120 s), the key never certified.
 * Before the CSR and again under the lock: the node was issued fewer than `renewalsPerHour` certificates in the
 * last hour (`rate-limited`).
 * Every refusal answers the same bytes and publishes `security.renew.refused` with the reason.
 *
 * Renewals that arrive together share their database work (a group commit): one query reads their leaves,
 * and one transaction takes their nodes' locks and writes them all (RenewalWriter), with one durable commit.
 * Each renewal is decided exactly as alone; only the round trips and the fsync are shared.
 */
export class RenewService {
  private readonly certTtlSeconds: number;
  private readonly renewalsPerHour: number;
  /** Presented leaves, read for every renewal that arrives together in one query. */
  readonly leaves: GroupRunner<Buffer, LeafRow | null>;
  /**
   * Renewals written together in one transaction and one durable commit. Two renewals with one proof or one
   * new key never share a group: the later one waits for the next and sees the first one's outcome.
   */
  readonly writes: GroupRunner<Renewal, WriteOutcome>;

  constructor(private readonly options: RenewServiceOptions) {
    this.certTtlSeconds = options.certTtlSeconds ?? MAX_NODE_CERT_TTL_SECONDS;
    this.renewalsPerHour = options.renewalsPerHour ?? renewalsPerNodePerHour({}, this.certTtlSeconds);
    const maxGroup = options.maxGroup ?? 128;
    this.leaves = new GroupRunner((leaves) => this.readLeaves(leaves), maxGroup);
    const writer = new RenewalWriter(options.pool, this.renewalsPerHour);
    // One group never holds two renewals of one node either: the per-node limit is counted after the node's lock.
    this.writes = new GroupRunner(
      (renewals) => writer.write(renewals),
      maxGroup,
      (r) => [`proof:${r.proof.toString('hex')}`, `key:${r.spkiSha256.toString('hex')}`, `node:${r.row.node_id}`],
    );
  }

  /** How renewals were grouped so far: leaf queries and write transactions, and the renewals they carried. */
  stats() {
    return { leafQueries: { ...this.leaves.stats }, writeTransactions: { ...this.writes.stats } };
  }

  async renew(call: RenewCall): Promise<JoinAnswer> {
    const started = performance.now();
    let reason = '';
    const answer = await this.answer(call, (refused) => (reason = refused));
    if (this.options.metrics)
      recordRenewal(this.options.metrics, answer.status === 200 ? 'renewed' : reason ? 'refused' : 'error', reason, started);
    return answer;
  }

  private async answer(call: RenewCall, refusedFor: (reason: string) => void): Promise<JoinAnswer> {
    const runtime = await this.options.loadRuntime();
    if (!runtime) return joinNotConfigured('JoinService has no keys configured: run better-compute pki init and set BETTER_COMPUTE_SECRET');
    try {
      return await this.issue(call, runtime.crypto, trustStateOf(runtime));
    } catch (error) {
      if (error instanceof Refused) {
        refusedFor(error.refusal.reason);
        await this.publishRefusal(error);
        return RENEW_REFUSED;
      }
      logError('renewal failed', error);
      return JOIN_FAILED;
    }
  }

  private async issue(call: RenewCall, crypto: JoinCrypto, trust: TrustState): Promise<JoinAnswer> {
    const refuse = (reason: string, detail: string, row: LeafRow | null = null, proven = false) =>
      new Refused(new RenewRefusal(reason, detail), row, proven);
    const body = call.body ?? Buffer.alloc(0);
    const peer = vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trust.servingCaPins);
    if (peer === 'no-peer') throw refuse('no-client-certificate', 'the caller presented no client certificate to the gateway');
    if (!peer) throw refuse('unvouched', call.vouch ? 'the gateway vouching does not verify' : 'not called through the gateway');
    let request;
    try {
      request = parseRenewBody(call.body);
    } catch (error) {
      if (error instanceof RenewRefusal) throw new Refused(error, null, false);
      throw error;
    }
    const row = await this.leaves.run(request.leaf);
    if (!row) throw refuse('certificate-unknown', 'the presented leaf is not a node_certs row');
    if (row.is_revoked) throw refuse('revoked', `certificate ${row.serial} is revoked`, row);
    if (row.is_expired) throw refuse('expired', `certificate ${row.serial} expired`, row);
    if (row.cert_generation !== row.node_generation)
      throw refuse('generation', `certificate ${row.serial} is of an older identity generation`, row);
    if (row.state === 'retired') throw refuse('node-retired', `node ${row.node_id} is retired`, row);
    if (!peer.equals(request.leaf)) throw refuse('peer-mismatch', 'the mutual-TLS peer is not the presented leaf', row);
    if (Math.abs(request.clientTime - row.now_seconds) > RENEW_CLOCK_SKEW_SECONDS) {
      throw refuse('clock', `clientTime is ${Math.round(request.clientTime - row.now_seconds)} s from the database's time`, row);
    }

    const leaf = readLeafNames(request.leaf);
    // The proof covers the CSR's hash, not its parse: it is checked first, so what follows (a bad CSR
    // included) is reported to the node's owner, whose key the caller has just proven.
    const message = renewPopMessage(sha256(request.csr).toString('hex'), row.node_id, request.clientTime);
    let proven = false;
    try {
      proven = verify('sha256', message, { key: publicKeyOf(leaf.spkiDer), dsaEncoding: 'ieee-p1363' }, request.popSig);
    } catch {
      proven = false;
    }
    if (!proven) throw refuse('pop', 'popSig does not verify under the current key', row);
    // An identity whose attestor caps its total life (a ramdisk's, from its first issue): renewals never extend it.
    const life = renewalLife(row);
    if (life?.refusal) throw refuse(life.refusal.reason, life.refusal.detail, row, true);
    // The per-node limit, from the node_certs rows issuance wrote (no write of its own); checked again, exactly,
    // after the node's lock in the write. After the proof: only the node's owner hears of it.
    if (row.issued_last_hour >= this.renewalsPerHour) {
      throw refuse(
        'rate-limited',
        `node ${row.node_id} was issued ${row.issued_last_hour} certificates in the last hour (at most ${this.renewalsPerHour})`,
        row,
        true,
      );
    }
    let csr: ReturnType<typeof parseCsr>;
    try {
      csr = parseCsr(request.csr);
    } catch (error) {
      if (error instanceof JoinRefusal) throw refuse('csr', error.detail, row, true);
      throw error;
    }
    const statements = leaf.uris.slice(1).filter((uri) => uri.startsWith('urn:bc:'));
    // Only a leaf whose statements an attestor checks (a TPM AK's) pays for the checks; every other leaf renews on its proof.
    const verdict = checkRenewal({ statements, keyAttestation: request.keyAttestation, csr });
    if (!verdict.ok) throw refuse(verdict.reason, verdict.detail, row, true);
    const spkiSha256 = sha256(csr.spkiDer);
    // The proof is what was signed, bound to the leaf: a re-encoded signature of the same proof is the same proof.
    const proof = sha256(request.leaf, message);
    return this.commit({ row, crypto, trust, csr, spkiSha256, proof, statements, lifeSeconds: life?.leftSeconds ?? null });
  }

  private async commit(input: {
    row: LeafRow;
    crypto: JoinCrypto;
    trust: TrustState;
    csr: { spkiDer: Buffer; csrSha256: string };
    spkiSha256: Buffer;
    proof: Buffer;
    statements: string[];
    /** What is left of the identity's capped life (renewalLife), or null. */
    lifeSeconds: number | null;
  }): Promise<JoinAnswer> {
    const { row, crypto, csr } = input;
    // Issued before the transaction, at the database time the leaf was read: the transaction then only writes,
    // in one statement after the locks, and a refusal there wastes one signature.
    const cert = issueNodeCertificate(crypto.nodeCa, {
      publicKeySpkiDer: csr.spkiDer,
      trustDomain: crypto.trustDomain,
      siteId: row.site_id,
      nodeId: row.node_id,
      role: row.role as NodeCertificateRole,
      notBefore: new Date(row.now_seconds * 1000),
      // Never past the end of a capped identity's life (renewalLife: a ramdisk's; at least a minute is left here).
      ttlSeconds: Math.min(certificateTtlFor(row.role, this.certTtlSeconds), input.lifeSeconds ?? Number.POSITIVE_INFINITY),
      extraUris: input.statements,
    });
    // Issued by the node CA in use, whichever CA issued the presented leaf (a rotation moves nodes over this way).
    const outcome = await this.writes.run({ row, cert, caPin: crypto.nodeCaPin, spkiSha256: input.spkiSha256, proof: input.proof });
    if (outcome === 'failed') return JOIN_FAILED;
    if (outcome !== 'issued') throw new Refused(new RenewRefusal(...WRITE_REFUSALS[outcome]), row, true);
    const envelope = signTrusted(input.trust, {
      status: 'renewed',
      nodeId: row.node_id,
      certificateChain: [cert.der.toString('base64'), crypto.nodeCaCertificate],
      commandTrustBundle: crypto.commandTrustBundle,
      csrSha256: csr.csrSha256,
      trustDomain: crypto.trustDomain,
      siteId: row.site_id,
      role: row.role,
      trust: joinAnswerTrust(input.trust),
    });
    return { status: 200, body: Buffer.from(JSON.stringify(envelope)) };
  }

  /** One query for the leaves of every renewal that arrived together; null where a leaf is no node_certs row. */
  private async readLeaves(leaves: Buffer[]): Promise<Array<LeafRow | null>> {
    // Named statements: each pooled connection parses and plans them once instead of on every group.
    const found = await this.options.pool.query<LeafRow>({
      name: 'renew-presented-leaves',
      text: SELECT_PRESENTED_LEAVES,
      values: [leaves.map((leaf) => sha256(leaf)), leaves],
    });
    const byOrd = new Map(found.rows.map((row) => [row.ord, row]));
    return leaves.map((_, i) => byOrd.get(i + 1) ?? null);
  }

  private async publishRefusal(refused: Refused) {
    try {
      // Before the caller proved the current key, anyone could name the node: the root tenant hears of it.
      const tenantId = refused.proven && refused.row ? refused.row.tenant_id : await this.options.loadRootTenantId();
      if (!tenantId) return;
      await recordRenewRefusal(
        this.options.pool,
        tenantId,
        { reason: refused.refusal.reason, nodeId: refused.row?.node_id ?? null, serial: refused.row?.serial ?? null },
        this.options.refusalLimit,
      );
    } catch (error) {
      logError('could not record a renew refusal', error);
    }
  }
}
