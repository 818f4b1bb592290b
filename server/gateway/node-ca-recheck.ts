import type { X509Certificate } from 'node:crypto';
import { isNodeCertificate } from './peer';

/**
 * The least time between two credentials calls made for client certificates the gateway could not verify: with
 * the regular call every 3 s, at most 80 a minute, under the API's 120 per gateway.
 */
const RECHECK_MIN_MS = 1_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * A client certificate that chains to none of the node CAs the gateway holds may be of a node CA the API has
 * just started issuing from: the gateway learns the node CAs by asking the API every few seconds, and an
 * operator may activate a node CA rotation sooner than that after preparing it (every node already holds the
 * new trust set, which travels on the sessions). Rather than vouching for no one (the API then refuses the
 * agent's Hello or renewal as without a certificate), the gateway asks the API for its credentials at once and
 * checks the certificate again against the node CAs it answers, never against anything the caller sent.
 * The calls are coalesced and spaced by {@link RECHECK_MIN_MS}, so certificates of an unknown CA, however many,
 * cost the API at most one call a second.
 */
export class NodeCaRecheck {
  /** Asks the API for the gateway's credentials now and serves what it answers (set once the follower exists). */
  refresh: (() => Promise<unknown>) | null = null;
  private pending: Promise<void> | null = null;
  private nextAt = 0;

  constructor(
    private readonly nodeCas: () => readonly X509Certificate[],
    private readonly minMs = RECHECK_MIN_MS,
  ) {}

  /** Whether `peer` chains to a node CA the API named in the call under way, or in one made now for it. */
  async chains(peer: X509Certificate): Promise<boolean> {
    const refresh = this.refresh;
    if (!refresh) return false;
    if (!this.pending) {
      const start = () => {
        this.nextAt = performance.now() + this.minMs;
        return refresh();
      };
      const wait = this.nextAt - performance.now();
      this.pending = (wait > 0 ? sleep(wait) : Promise.resolve())
        .then(start)
        .then(
          () => {},
          () => {},
        )
        .finally(() => (this.pending = null));
    }
    await this.pending;
    return isNodeCertificate(peer, this.nodeCas());
  }
}
