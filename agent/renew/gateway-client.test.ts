import tls from 'node:tls';
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
    const url = new URL(r.target.gatewayUrl);
    const outcomes = await new Promise<string[]>((resolve, reject) => {
      const socket = tls.connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false });
      socket.once('error', reject);
      // A chain connectGateway checked (and remembered) above, checked again at a time past its validity.
      socket.once('secureConnect', () => {
        try {
          checkGatewayChain(socket, r.target.servingCaPin, url.hostname, new Date('2199-01-01T00:00:00Z'));
          resolve(['ok']);
        } catch (error) {
          resolve([(error as Error).message]);
        } finally {
          socket.destroy();
        }
      });
    });
    expect(outcomes).toEqual(["the gateway's certificate is not valid now"]);
    await expect(connectGateway({ ...r.target, servingCaPin: 'sha256/' + 'A'.repeat(43) + '=' })).rejects.toThrow(
      /does not match the pinned servingCaPin/,
    );
    await expect(connectGateway({ ...r.target, gatewayServerName: 'elsewhere.example' })).rejects.toThrow(GatewayTrustError);
    await expect(connectGateway({ ...r.target, gatewayServerName: 'elsewhere.example' })).rejects.toThrow(
      /does not name elsewhere.example/,
    );
    // Node's own TLS name check is off (the pin replaces it), so the name and dates are ours to check.
    (await connectGateway(r.target)).destroy();
  });
});
