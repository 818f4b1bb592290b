import { X509Certificate } from 'node:crypto';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../protocol/node-key';
import {
  GATEWAY_CREDENTIALS_PATH,
  parseGatewayCredentialsAnswer,
  type GatewayCredentialsAnswer,
} from '../../protocol/gateway-credentials-wire';
import type { GatewayCredentials } from './credentials';
import { certificatesOf } from './peer';

/** How often a gateway asks the API for its credentials (and at once on start). */
const CREDENTIALS_POLL_MS = 3_000;

const RATE_LIMITED_WAIT_MS = 10_000;

/** A call to the API with the gateway's vouching for no peer (the relay's). */
type ApiPost = (pathname: string, body: Buffer) => Promise<{ status: number; body: Buffer }>;

interface FollowerOptions {
  post: ApiPost;
  basePath: string;
  /** The credentials served now. */
  current: () => GatewayCredentials;
  /** Serves new credentials from the next handshake on (GatewayServer.updateCredentials). */
  apply: (next: GatewayCredentials) => void;
  /** Keeps them for a restart (writeGatewayFiles); a failure is logged and the served ones stay. */
  save?: (next: GatewayCredentials) => Promise<void>;
  log: (line: string) => void;
  pollMs?: number;
}

const pemOf = (b64: string) => new X509Certificate(Buffer.from(b64, 'base64')).toString();
const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x) => b.includes(x));
/** True when `leafPem` is signed by the key of the first certificate of `chain` (b64 DER). */
function issuedBy(leafPem: string, chain: readonly string[]): boolean {
  try {
    return new X509Certificate(leafPem).verify(new X509Certificate(Buffer.from(chain[0]!, 'base64')).publicKey);
  } catch {
    return false;
  }
}

/**
 * The gateway's side of a trust rotation: it asks the API every few seconds (and at once) for the trust
 * version, the node CAs to trust and, when its leaf is not from the serving CA in use or nears its end, a new
 * serving chain for a key it made itself (the CSR of that key goes in every call; the key never leaves). A
 * change is served from the next handshake on and written to the gateway's directory. While the API cannot be
 * reached, or answers anything else, the gateway keeps serving what it has.
 */
export class CredentialsFollower {
  /** The trust version of the last answer (0 before one). */
  trustVersion = 0;
  readonly stats = { calls: 0, changes: 0, failures: 0 };
  private nextKey: NodeKeyAndCsr = generateNodeKeyAndCsr({ commonName: 'Better Compute gateway' });
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private polling: Promise<void> | null = null;

  constructor(private readonly options: FollowerOptions) {}

  /** Asks at once, then every `pollMs` until {@link stop}. */
  start() {
    const loop = (delayMs: number) => {
      if (this.stopped) return;
      this.timer = setTimeout(() => void this.poll().then(loop), delayMs);
      this.timer.unref();
    };
    void this.poll().then(loop);
  }

  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** One call (one at a time); resolves with the delay before the next. */
  poll(): Promise<number> {
    const pollMs = this.options.pollMs ?? CREDENTIALS_POLL_MS;
    let delay = pollMs;
    this.polling ??= this.call()
      .then((retryAfterMs) => void (delay = Math.max(pollMs, retryAfterMs)))
      .catch(() => void (this.stats.failures += 1))
      .finally(() => (this.polling = null));
    return this.polling.then(() => delay);
  }

  /**
   * One call that starts now, or once the call under way ends (it may have been answered before a change):
   * what the API says at this point.
   */
  async pollAgain(): Promise<void> {
    if (this.polling) await this.polling;
    await this.poll();
  }

  /** Resolves with how long the API asked to wait (0 when it did not). */
  private async call(): Promise<number> {
    this.stats.calls += 1;
    const body = Buffer.from(JSON.stringify({ csr: this.nextKey.csrDer.toString('base64'), trustVersion: this.trustVersion }));
    const reply = await this.options.post(`${this.options.basePath}${GATEWAY_CREDENTIALS_PATH}`, body);
    // Past this gateway's rate (several gateways sharing one certificate, or a loop): ask again more calmly.
    if (reply.status === 429) return RATE_LIMITED_WAIT_MS;
    if (reply.status !== 200) throw new Error(`the API answered ${reply.status}`);
    const answer = parseGatewayCredentialsAnswer(reply.body);
    if (!answer) throw new Error('the API answered something that is not a credentials answer');
    await this.follow(answer);
    return 0;
  }

  private async follow(answer: GatewayCredentialsAnswer) {
    const current = this.options.current();
    const served = certificatesOf(current.nodeCaPem).map((ca) => ca.raw.toString('base64'));
    const nodeCasChanged = !sameSet(served, answer.nodeCas);
    let next: GatewayCredentials = current;
    if (nodeCasChanged) next = { ...next, nodeCaPem: answer.nodeCas.map(pemOf).join('') };
    if (answer.servingChain) {
      const [leaf, ca] = answer.servingChain.map(pemOf) as [string, string];
      const certified = new X509Certificate(leaf).publicKey.export({ type: 'spki', format: 'der' });
      if (!certified.equals(this.nextKey.spkiDer)) throw new Error('the new serving certificate is not for the key the gateway asked for');
      const after = answer.servingCaChain && issuedBy(leaf, answer.servingCaChain) ? answer.servingCaChain.map(pemOf).join('') : ca;
      next = { ...next, servingChainPem: leaf + after, servingKeyPem: this.nextKey.privateKeyPem };
    } else if (answer.servingCaChain) {
      // The same leaf with what follows it changed: a serving CA rotation became active (the cross-certificate and
      // the previous CA follow the leaf) or was retired (the serving CA alone).
      const [leaf, ...after] = certificatesOf(current.servingChainPem);
      const served = after.map((c) => c.raw.toString('base64'));
      if (leaf && issuedBy(leaf.toString(), answer.servingCaChain) && served.join() !== answer.servingCaChain.join())
        next = { ...next, servingChainPem: leaf.toString() + answer.servingCaChain.map(pemOf).join('') };
    }
    if (next !== current) {
      this.options.apply(next);
      this.stats.changes += 1;
      if (answer.servingChain) this.nextKey = generateNodeKeyAndCsr({ commonName: 'Better Compute gateway' });
      this.options.log(
        JSON.stringify({
          gateway: 'credentials',
          trustVersion: answer.trustVersion,
          servingChain: answer.servingChain !== null,
          nodeCas: answer.nodeCas.length,
        }),
      );
      try {
        await this.options.save?.(next);
      } catch (error) {
        this.options.log(`The gateway could not write its new credentials (it serves them until a restart): ${String(error)}`);
      }
    }
    this.trustVersion = answer.trustVersion;
  }
}
