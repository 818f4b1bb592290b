import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPki } from '../../server/pki/bundle/store';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { spawnGateway, type SpawnedGateway } from '../gateway-process';
import { rotate, rotationStatusOf, rotationStep, servedCaPin, startRotationDeployment, type RotationDeployment } from './deployment';

// Retiring the serving CA while a gateway has not fetched its new leaf would strand it: its credentials calls are
// vouched by the old CA's leaf, refused once that CA is retired. With a gateway process that was seen a moment
// ago and is down when the serving CA is activated, the retirement is refused (naming it) until the gateway is
// back and serving the new CA's leaf; the other gateway, which switched at once, does not hold it up.

let d: RotationDeployment;
const extra: SpawnedGateway[] = [];

beforeAll(async () => {
  d = await startRotationDeployment({ label: 'rotation_gateway_retire', apiCount: 1 });
}, 180_000);

afterAll(async () => {
  await Promise.all(extra.map((g) => g.stop()));
  await d?.stop();
});

const servingCa = async () => (await rotationStatusOf(d)).keys.find((k) => k.kind === 'serving-ca')!;
const poll = { timeout: 60_000, interval: 500 };

describe('retiring the serving CA with a gateway that has not caught up', () => {
  it(
    'is refused while the gateway was seen within the minute on the old leaf, and allowed once it serves the new one',
    { timeout: 300_000 },
    async () => {
      const bundle = await loadPki(d.database.db, d.secret);
      const cert = issueGatewayCertificate(bundle, { sans: ['gw-b.example.com', '127.0.0.1'] });
      const credentials = { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem };
      const seen = () =>
        d.database.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM gateway_credential_calls WHERE 'gw-b.example.com' = ANY (names)`.then((r) => r[0]!.n);
      // Gateway B runs long enough to call the API, then goes down (as a crash or a partition would).
      const first = await spawnGateway({ credentials, apiUrl: d.apis[0]!.url });
      extra.push(first);
      await expect.poll(seen, poll).toBe(1);
      await first.stop('SIGKILL');

      await rotate(d, 'serving-ca', 'prepare');
      await rotate(d, 'serving-ca', 'activate');
      const next = (await servingCa()).currentPin;
      // The running gateway switches to the new CA's leaf; only gateway B is left on the old one.
      await expect.poll(() => servedCaPin(d.gateways[0]!), poll).toBe(next);
      await expect.poll(async () => (await servingCa()).gatewaysOnPrevious, poll).toBe(1);
      const refused = await rotationStep(d, 'serving-ca', 'retire');
      expect(refused.body.code).toBe('INVALID_STATE');
      expect(refused.body.message).toMatch(/^1 gateway\(s\) seen in the last 60 seconds still serve a leaf of the previous serving CA/);
      expect(refused.body.message).toContain('gw-b.example.com');
      expect((await servingCa()).phase).toBe('active');

      // Back with its old leaf, gateway B fetches a leaf of the new CA and serves it; nothing is left to strand.
      const back = await spawnGateway({ credentials, apiUrl: d.apis[0]!.url });
      extra.push(back);
      await expect.poll(() => servedCaPin(back), poll).toBe(next);
      await expect.poll(async () => (await servingCa()).gatewaysOnPrevious, poll).toBe(0);
      expect((await rotationStep(d, 'serving-ca', 'retire')).status).toBe(200);
      expect(await servedCaPin(back)).toBe(next);
    },
  );
});
