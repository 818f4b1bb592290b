import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRenewHarness, type RenewHarness } from '../../test/renew-harness';
import { checkGatewayChain, connectGateway, GatewayTrustError } from './gateway-client';

let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});

describe('the agent checks the gateway chain on every connection', () => {
  it('a chain checked once is still refused under another pin, another name, or a clock past its validity', async () => {
    (await connectGateway(r.target)).destroy();
    const socket = await connectGateway(r.target);
    const host = new URL(r.target.gatewayUrl).hostname;
    expect(() => checkGatewayChain(socket, r.target.servingCaPin, host, new Date('2199-01-01T00:00:00Z'))).toThrow(/not valid now/);
    socket.destroy();
    await expect(connectGateway({ ...r.target, servingCaPin: 'sha256/' + 'A'.repeat(43) + '=' })).rejects.toThrow(/does not match the pinned servingCaPin/);
    await expect(connectGateway({ ...r.target, gatewayServerName: 'elsewhere.example' })).rejects.toThrow(GatewayTrustError);
    await expect(connectGateway({ ...r.target, gatewayServerName: 'elsewhere.example' })).rejects.toThrow(/does not name elsewhere.example/);
    // Node's own TLS name check is off (the pin replaces it), so the name and dates are ours to check.
    (await connectGateway(r.target)).destroy();
  });
});
