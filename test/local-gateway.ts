import type { AddressInfo } from 'node:net';
import { createGateway, type GatewayServer } from '../server/gateway/gateway';
import type { GatewayLimits } from '../server/gateway/limits';
import { issueGatewayCertificate } from '../server/pki/issuance/gateway';
import { fixturePki } from './pki/fixtures';

/**
 * A gateway in this process on the test file's fixture PKI (a serving chain for localhost and 127.0.0.1)
 * whose API is nowhere, so every call a test makes ends at the gateway, listening on 127.0.0.1 with `limits`.
 */
export async function unrelayedGateway(limits: Partial<GatewayLimits>): Promise<{ server: GatewayServer; port: number }> {
  const { bundle } = fixturePki();
  const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
  const server = createGateway({
    servingChainPem: cert.chainPem,
    servingKeyPem: cert.privateKeyPem,
    nodeCaPem: bundle.nodeCa.certificatePem,
    apiUrl: 'http://127.0.0.1:9',
    basePath: '/api/compute',
    log: () => {},
    limits,
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  return { server, port };
}
