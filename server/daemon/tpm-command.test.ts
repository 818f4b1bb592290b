import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TpmClient } from '../../agent/tpm/client';
import { createEndorsementKey } from '../../agent/tpm/endorsement';
import { ekHashOf } from '../../agent/tpm/identify';
import { parseTpmAddress } from '../../agent/tpm/transport';
import { buildBcdForTests, newMachineRoot, removeMachineRoots, run } from '../../test/bcd-build';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { createEkRoot, issueEkCertificate, writeEkCertificate } from '../../test/tpm-provision';
import { createHash } from 'node:crypto';
import { parseTpmPublic, spkiOf } from '../../protocol/tpm/public-area';

// The built bcd executable against a software TPM it reaches over swtpm's socket protocol.
let bcd: Awaited<ReturnType<typeof buildBcdForTests>>;
let swtpm: Swtpm;

beforeAll(async () => {
  [bcd, swtpm] = await Promise.all([buildBcdForTests(), startSwtpm()]);
}, 600_000);
afterAll(async () => {
  await swtpm?.stop();
  removeMachineRoots();
});

const env = (extra: Record<string, string> = {}) =>
  ({ PATH: '/nonexistent', BCD_ROOT: newMachineRoot(), ...extra }) as unknown as NodeJS.ProcessEnv;

describe('bcd tpm', () => {
  it("prints the EK hash the server computes, from --tpm or BCD_TPM, and the EK certificate's issuer once there is one", async () => {
    // swtpm serves one connection at a time: the test's own client is closed while bcd runs.
    let tpm = await TpmClient.open(parseTpmAddress(swtpm.address));
    const ek = await createEndorsementKey(tpm, 'ecc');
    await tpm.flush(ek.handle);
    // bcd's EK hash is the server's for an RSA EK too.
    const rsa = await createEndorsementKey(tpm, 'rsa');
    await tpm.flush(rsa.handle);
    expect(ekHashOf(rsa.publicArea)).toBe(
      createHash('sha256')
        .update(spkiOf(parseTpmPublic(rsa.publicArea, 'EK')))
        .digest('hex'),
    );
    await tpm.close();
    const ekSpki = spkiOf(parseTpmPublic(ek.publicArea, 'EK'));
    const expected = createHash('sha256').update(ekSpki).digest('hex');
    expect(ekHashOf(ek.publicArea)).toBe(expected);

    const byFlag = await run(bcd.binary, ['tpm', '--tpm', swtpm.address], { env: env() });
    expect(byFlag.code, byFlag.stderr).toBe(0);
    expect(byFlag.stdout).toBe(`ek hash: ${expected}\nek: ECC P-256, no EK certificate\n`);

    const root = await createEkRoot('CN=Example TPM Vendor,O=Tests');
    tpm = await TpmClient.open(parseTpmAddress(swtpm.address));
    await writeEkCertificate(tpm, 'ecc', await issueEkCertificate(root, ekSpki, 'ecc'));
    await tpm.close();
    const byEnv = await run(bcd.binary, ['tpm'], { env: env({ BCD_TPM: swtpm.address }) });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect(byEnv.stdout).toContain(`ek hash: ${expected}\n`);
    expect(byEnv.stdout).toMatch(/ek: ECC P-256, certificate issued by .*CN=Example TPM Vendor/);
  }, 120_000);

  it('fails with the place it looked when the TPM cannot be opened, and on a malformed address', async () => {
    const closed = await run(bcd.binary, ['tpm', '--tpm', 'swtpm:127.0.0.1:1'], { env: env() });
    expect(closed.code).toBe(1);
    expect(closed.stderr).toContain('bcd: cannot open the TPM at swtpm:127.0.0.1:1 (set --tpm or BCD_TPM)');
    const device = await run(bcd.binary, ['tpm', '--tpm', '/nonexistent/tpmrm0'], { env: env() });
    expect(device.code).toBe(1);
    expect(device.stderr).toContain('cannot open the TPM at /nonexistent/tpmrm0');
    const malformed = await run(bcd.binary, ['tpm'], { env: env({ BCD_TPM: 'tcp://somewhere' }) });
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain('neither a device path');
  }, 60_000);
});
