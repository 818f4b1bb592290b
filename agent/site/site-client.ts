import { postToGateway, type GatewayTarget } from '../renew/gateway-client';
import { loadIdentity } from '../renew/identity';
import { clientIdentityOf } from '../renew/tpm-renewal';
import { SECRET_REF, SITE_DISCOVERY_TOKEN_PATH, SITE_REDEEM_PATH, type SiteMintRequest } from '../../protocol/site-agent-wire';

/** The control plane refused a mint or a redeem (the uniform refusal: the reason is server side only). */
class SiteRequestRefusedError extends Error {
  constructor(readonly status: number) {
    super(`the control plane refused the request (${status})`);
    this.name = 'SiteRequestRefusedError';
  }
}

/** A discovery token the control plane minted for a lease: its id, and the bearer token (never logged). */
export interface LeaseToken {
  ref: string;
  tokenId: string;
  token: string;
}

/**
 * The site agent's two calls, each on a mutual TLS connection of its own to the gateway with the identity
 * stored now (read at every call, so a renewed certificate is used from the next call on): mint a discovery
 * token for a lease (a secret reference comes back), then redeem the reference once for the bearer token.
 */
export class SiteClient {
  constructor(
    private readonly target: GatewayTarget & { basePath?: string },
    private readonly identityDir: string,
  ) {}

  private async post(path: string, body: object): Promise<Record<string, unknown>> {
    const client = clientIdentityOf(await loadIdentity(this.identityDir));
    const reply = await postToGateway(this.target, client, `${this.target.basePath ?? '/api/compute'}${path}`, JSON.stringify(body));
    if (reply.status !== 200) throw new SiteRequestRefusedError(reply.status);
    return JSON.parse(reply.body.toString('utf8')) as Record<string, unknown>;
  }

  /** Mints (or, for the same lease epoch, finds again) the MAC's discovery token and redeems its reference. */
  async tokenForLease(
    lease: SiteMintRequest,
    redeemed?: { ref: string; tokenId: string },
  ): Promise<LeaseToken | { ref: string; tokenId: string }> {
    const minted = await this.post(SITE_DISCOVERY_TOKEN_PATH, lease);
    const ref = String(minted.ref);
    if (!SECRET_REF.test(ref) || typeof minted.tokenId !== 'string') throw new Error('the control plane answered a malformed reference');
    // A retry of a lease already redeemed: the same reference, which redeems only once.
    if (redeemed?.ref === ref) return { ref, tokenId: minted.tokenId };
    const answer = await this.post(SITE_REDEEM_PATH, { ref });
    if (typeof answer.token !== 'string' || answer.tokenId !== minted.tokenId)
      throw new Error('the control plane answered a malformed redemption');
    return { ref, tokenId: minted.tokenId, token: answer.token };
  }
}
