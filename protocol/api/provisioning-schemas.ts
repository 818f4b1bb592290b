import { z } from 'zod';
import { idOf } from './resource-names';
import { ttlSeconds } from './token-schemas';
import { hex256, origin } from './daemon-schemas';

/** `provisioning.userData`: cloud-init user data that joins a machine back as one node. */
export const userDataInput = z.strictObject({
  tenantId: idOf('tnt'),
  nodeId: idOf('node'),
  /** The pool the node joins into; the node's own pool when absent. It must be in the node's site. */
  poolId: idOf('pool').optional(),
  /** The token's lifetime, 60 to 86,400 seconds: long enough for the deploy to boot the machine. */
  ttlSeconds,
  /** The control plane's origin the machine reaches (the well-known document and the bcd download). */
  serverUrl: origin,
  /** Digests of bcd per arch; when absent, those of this server's build of its own version. */
  sha256: z.strictObject({ amd64: hex256.optional(), arm64: hex256.optional() }).optional(),
});
export type UserDataInput = z.infer<typeof userDataInput>;

export const userDataOutput = z.object({
  nodeId: z.string(),
  poolId: z.string(),
  /** The token's id (never the token: it is only inside `userData`). */
  tokenId: z.string(),
  expiresAt: z.string(),
  /** `#cloud-config` YAML; it holds the bearer token, so it is a secret. */
  userData: z.string(),
});
export type UserDataOutput = z.infer<typeof userDataOutput>;
