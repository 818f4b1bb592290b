import { X509Certificate, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { loadIdentity, type LoadedIdentity } from '../agent/renew/identity';
import { openSession } from '../agent/session/session-client';
import type { HardwareClaims } from '../protocol/hardware-claims';
import type { TestTenant } from './fixtures';
import { machineClaims, mintToken } from './join-harness';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from './renew-harness';

/**
 * A renew harness for the calling test file: created before its tests and handed to `use` with the key that
 * verifies session welcomes (the join-signing key), closed after them.
 */
export function useRenewHarness(
  use: (created: { r: RenewHarness; signingKey: KeyObject }) => void,
  options?: Parameters<typeof createRenewHarness>[0],
): void {
  let r: RenewHarness | undefined;
  beforeAll(async () => {
    r = await createRenewHarness(options);
    use({ r, signingKey: new X509Certificate(r.h.trust.signingCertificateDer).publicKey });
  });
  afterAll(async () => {
    await r?.close();
  });
}

/** A node of `t` joined through the harness's gateway: its identity directory, id and loaded identity. */
export async function joinedThroughGateway(r: RenewHarness, t: TestTenant, claims: HardwareClaims = machineClaims()) {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!, claims);
  return { dir, nodeId: answer.nodeId, identity: await loadIdentity(dir) };
}

/** A session opened as the agent opens it through the harness's gateway, its welcome verified under `signingKey`. */
export const openAgentSession = (r: RenewHarness, signingKey: KeyObject, identity: LoadedIdentity, onEvent?: (type: string) => void) =>
  openSession(r.target, identity, { basePath: BASE, agentVersion: '0.1.0-test', signingKey, onEvent: (e) => onEvent?.(e.type) });
