import { createHash, X509Certificate } from 'node:crypto';
import { decodeBase64url } from '../../protocol/base64url';
import {
  GATEWAY_CREDENTIALS_REFUSED,
  parseGatewayCredentialsCall,
  type GatewayCredentialsAnswer,
} from '../../protocol/gateway-credentials-wire';
import { parseCsr } from '../join/crypto/csr';
import type { PkiRuntime } from '../join/join-runtime';
import { logError } from '../log';
import { issueGatewayCertificateForKey } from '../pki/issuance/gateway';
import { trustStateOf } from '../pki/rotation/trust-state';
import { vouchedPeer, vouchHoldsBeforeBody } from '../vouching/vouch';
import type { RateVerdict } from '../http/shared-rate-limit';
import type { GatewayCall } from './gateway-calls';

/** A new serving chain is issued when the current leaf has less than this left. */
const RENEW_BEFORE_MS = 86_400_000;

/** A vouched call as the API received it: the body (null past the cap), the gateway's headers, the path. */
interface GatewayCredentialsRequest {
  body: Buffer | null;
  vouch: string | undefined;
  peer: string | undefined;
  path: string;
}

/** What the route writes: status, body, and `retryAfterSeconds` for a 429. */
interface GatewayCredentialsReply {
  status: number;
  body: Buffer;
  retryAfterSeconds?: number;
}

interface Options {
  loadRuntime: () => Promise<PkiRuntime | null>;
  /** The per-gateway request limit, shared by every instance (subject: the hash of the vouching leaf). */
  limit: { hit(subject: string): Promise<RateVerdict> };
  /** Records each answered call (gateway-calls.ts: retiring the serving CA checks no gateway would be stranded). */
  record: (call: GatewayCall) => Promise<void>;
  now?: () => number;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const der64 = (pem: string) => new X509Certificate(pem).raw.toString('base64');

/** Every serving CA pin a gateway's vouching may chain to: the one in use, and any other still trusted. */
const servingCaPinsOf = (runtime: PkiRuntime) => [...new Set([runtime.servingCaPin, ...trustStateOf(runtime).servingCaPins])];

/**
 * The gateway's leaf and serving CA from a vouching header. Only read after the vouching verified, so the
 * chain is one the serving CA issued; null when the header is not readable.
 */
function vouchingChain(vouch: string): [X509Certificate, X509Certificate] | null {
  try {
    const payload = decodeBase64url(vouch.split('.')[0] ?? '');
    const chain = payload ? (JSON.parse(payload.toString('utf8')) as { chain?: unknown }).chain : null;
    if (!Array.isArray(chain) || chain.length !== 2) return null;
    return [new X509Certificate(Buffer.from(String(chain[0]), 'base64')), new X509Certificate(Buffer.from(String(chain[1]), 'base64'))];
  } catch {
    return null;
  }
}

/** The DNS and IP names of a leaf's subjectAltName, in order. */
function leafNames(leaf: X509Certificate): string[] {
  return (leaf.subjectAltName ?? '')
    .split(', ')
    .map((name) => /^(?:DNS|IP Address):(.+)$/.exec(name)?.[1])
    .filter((name): name is string => name !== undefined);
}

/**
 * The API's side of a gateway's credentials call (protocol/gateway-credentials-wire.ts): believed only with the
 * gateway's vouching for no peer under a serving CA that is trusted now (the one in use, or the other one of a
 * rotation, so a gateway still serving the old CA's leaf can ask for its next one). Every refusal is the same
 * bytes. A gateway is limited to `limit` calls per window, counted in PostgreSQL. Each answered call is recorded
 * (`record`: the leaf, the serving CA it chains to, its names, the leaf issued to replace it).
 */
export class GatewayCredentialsService {
  private readonly now: () => number;

  constructor(private readonly options: Options) {
    this.now = options.now ?? Date.now;
  }

  /**
   * True when the vouching could hold for some body (signature, chain, age, path): asked before the body is
   * read, so a caller without a gateway's vouching is refused without sending it.
   */
  async holdsBeforeBody(vouch: string | undefined, path: string): Promise<boolean> {
    const runtime = await this.options.loadRuntime();
    if (!runtime) return false;
    return servingCaPinsOf(runtime).some((pin) => vouchHoldsBeforeBody(vouch, path, pin, this.now()));
  }

  /** Answers a call: the trust version, the node CAs, and a new serving chain when the current leaf needs one. */
  async answer(request: GatewayCredentialsRequest): Promise<GatewayCredentialsReply> {
    const { body, vouch } = request;
    const runtime = await this.options.loadRuntime();
    if (!runtime || !body || !vouch) return GATEWAY_CREDENTIALS_REFUSED;
    const now = this.now();
    const servingCaPin = servingCaPinsOf(runtime).find(
      (pin) => vouchedPeer({ vouch, peer: request.peer }, body, request.path, pin, now) === 'no-peer',
    );
    const chain = servingCaPin ? vouchingChain(vouch) : null;
    if (!servingCaPin || !chain) return GATEWAY_CREDENTIALS_REFUSED;
    const [leaf] = chain;
    const leafSha256 = sha256(leaf.raw);
    const verdict = await this.options.limit.hit(leafSha256);
    if (!verdict.allowed) {
      const message = `Too many credentials calls from this gateway; retry after ${verdict.retryAfterSeconds} seconds`;
      return {
        status: 429,
        body: Buffer.from(JSON.stringify({ code: 'INVALID_STATE', message })),
        retryAfterSeconds: verdict.retryAfterSeconds,
      };
    }
    const call = parseGatewayCredentialsCall(body);
    if (!call) return GATEWAY_CREDENTIALS_REFUSED;
    const trust = trustStateOf(runtime);
    const answer: GatewayCredentialsAnswer = {
      trustVersion: trust.version,
      servingChain: null,
      nodeCas: trust.nodeCas.map((ca) => ca.certificate),
    };
    const servingCa = runtime.servingCa;
    if (servingCa) answer.servingCaChain = (runtime.servingCaChain ?? [servingCa.certificatePem]).map(der64);
    if (servingCa && this.needsNewLeaf(leaf, servingCa.certificatePem, now)) {
      let spkiDer: Buffer;
      try {
        spkiDer = parseCsr(Buffer.from(call.csr, 'base64')).spkiDer;
      } catch {
        return GATEWAY_CREDENTIALS_REFUSED;
      }
      try {
        const issued = issueGatewayCertificateForKey({ servingCa }, { spkiDer, sans: leafNames(leaf) });
        answer.servingChain = [der64(issued.certificatePem), der64(servingCa.certificatePem)];
      } catch (error) {
        logError('a gateway serving certificate could not be issued', error);
        return GATEWAY_CREDENTIALS_REFUSED;
      }
    }
    const successor = answer.servingChain ? sha256(Buffer.from(answer.servingChain[0], 'base64')) : null;
    await this.options.record({ leafSha256, servingCaPin, names: leafNames(leaf), successorSha256: successor });
    return { status: 200, body: Buffer.from(JSON.stringify(answer)) };
  }

  /** True when `leaf` is not from the serving CA in use, or expires within a day. */
  private needsNewLeaf(leaf: X509Certificate, servingCaPem: string, now: number): boolean {
    const ca = new X509Certificate(servingCaPem);
    const fromCa = leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
    return !fromCa || Date.parse(leaf.validTo) - now < RENEW_BEFORE_MS;
  }
}
