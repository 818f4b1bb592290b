import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { TpmClient } from '../../agent/tpm/client';
import { createEndorsementKey } from '../../agent/tpm/endorsement';
import { ekSpkiOf } from '../../agent/tpm/public-area';
import { parseTpmAddress } from '../../agent/tpm/transport';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { createEkRoot, issueEkCertificate, writeEkCertificate } from '../../test/tpm-provision';
import { startCli } from '../support/cli';
import { newScope, openQueue, requestRow, type Scope } from '../support/queue';
import { roleState } from '../support/roles';
import { openConsole, trpc } from '../support/session';

// Signed in as the first admin by the setup project (e2e/support/roles.ts).
test.use({ storageState: roleState('admin') });

/**
 * TPM enrollment in the console: two machines, each a software TPM (swtpm) driven by the real agent
 * (`better-compute agent join --attestor tpm`, a process of its own), join with no token. The e2e server trusts
 * no EK vendor root, so both wait in the queue, which shows what the TPM proved: the EK hash, the EK
 * certificate's issuer (or "no EK certificate") and why it did not chain, and the AK. The operator approves
 * one in the browser, and the machine's next run joins.
 */

interface TpmMachine {
  swtpm: Swtpm;
  identityDir: string;
  ekHash: string;
}

async function tpmMachine(vendor?: Awaited<ReturnType<typeof createEkRoot>>): Promise<TpmMachine> {
  const swtpm = await startSwtpm();
  // swtpm serves one connection at a time: this client is closed before the agent runs.
  const client = await TpmClient.open(parseTpmAddress(swtpm.address));
  try {
    const ek = await createEndorsementKey(client, 'ecc');
    await client.flush(ek.handle);
    const spki = ekSpkiOf(ek.publicArea);
    if (vendor) await writeEkCertificate(client, 'ecc', await issueEkCertificate(vendor, spki, 'ecc'));
    return {
      swtpm,
      identityDir: mkdtempSync(path.join(tmpdir(), 'e2e-tpm-agent-')),
      ekHash: createHash('sha256').update(spki).digest('hex'),
    };
  } finally {
    await client.close();
  }
}

/** One run of the agent's tpm join that does not wait (exit 3 while pending; the next run resumes the request). */
async function agentJoin(request: APIRequestContext, scope: Scope, machine: TpmMachine) {
  const doc = await (await request.get('/api/compute/.well-known/better-compute')).json();
  const run = startCli(
    [
      'agent',
      'join',
      '--attestor',
      'tpm',
      '--site',
      scope.siteId,
      '--pool',
      scope.poolId,
      '--tpm',
      machine.swtpm.address,
      '--no-wait',
      '--identity-dir',
      machine.identityDir,
      '--join-signing-key-pin',
      doc.join.signingKeyPin,
      '--join-encryption-key-pin',
      doc.join.encryptionKeyPin,
    ],
    scope.apiKey,
  );
  return { code: await run.done, stdout: run.stdout.join('\n'), stderr: run.stderr.join('\n') };
}

/** The AK statement the server must show: the AK's Name (sha256 of its public area), from the agent's saved attempt. */
function akStatementOf(machine: TpmMachine): string {
  const saved = JSON.parse(readFileSync(path.join(machine.identityDir, 'tpm-join.pending'), 'utf8')) as { ak: { publicArea: string } };
  return `urn:bc:tpm-ak:sha256:${createHash('sha256').update(Buffer.from(saved.ak.publicArea, 'base64')).digest('hex')}`;
}

const WAITING = /Waiting for approval \(join request (jreq_\S+)\); give an operator the EK hash ([0-9a-f]{64})/;

test('TPM join requests show the EK hash, its certificate issuer or none, and the AK; an approved machine joins', async ({ page }) => {
  test.setTimeout(180_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  // Enrollment is off unless the site turns it on: this one does, so unlisted TPMs wait in its queue.
  await trpc(page.request, 'mutation', 'sites.update', { tenantId: scope.tenantId, siteId: scope.siteId, tpm: { enrollment: true } });
  await openQueue(page, scope);
  const vendor = await createEkRoot('CN=E2E Unknown TPM Vendor,O=Better Compute Tests');
  const machines = [await tpmMachine(vendor), await tpmMachine()];
  try {
    const ids: string[] = [];
    for (const machine of machines) {
      const run = await agentJoin(page.request, scope, machine);
      expect(run.code, run.stdout + run.stderr).toBe(3);
      const [, requestId, ekHash] = WAITING.exec(run.stdout)!;
      expect(ekHash).toBe(machine.ekHash);
      ids.push(requestId!);
    }
    const [certified, bare] = machines as [TpmMachine, TpmMachine];
    const [certifiedId, bareId] = ids as [string, string];

    // Both arrive without a reload.
    for (const id of ids) await expect(requestRow(page, id)).toBeVisible({ timeout: 15_000 });
    // Neither EK chains to a vendor root on this server: each row says so, and approving both names how many.
    for (const id of ids) await expect(requestRow(page, id)).toContainText('EK not vendor-certified');
    await page.getByRole('checkbox', { name: 'Select all requests on this page' }).check();
    await page.getByRole('button', { name: 'Approve 2' }).click();
    const both = page.getByRole('dialog', { name: 'Approve 2 requests' });
    await expect(both.getByTestId('decide-not-certified')).toContainText(
      '2 of the selected 2 requests are TPM enrollments whose EK is not vendor-certified',
    );
    await both.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('checkbox', { name: 'Select all requests on this page' }).uncheck();

    await requestRow(page, bareId).getByRole('button', { name: bareId }).click();
    const bareDetail = page.getByRole('region', { name: `Request ${bareId}` });
    await expect(bareDetail).toContainText('TPM endorsement key');
    await expect(bareDetail.getByRole('button', { name: `Copy EK hash ${bare.ekHash}` })).toBeVisible();
    await expect(bareDetail).toContainText('no EK certificate');
    await expect(bareDetail).toContainText(akStatementOf(bare));

    await requestRow(page, certifiedId).getByRole('button', { name: certifiedId }).click();
    const detail = page.getByRole('region', { name: `Request ${certifiedId}` });
    await expect(detail.getByRole('button', { name: `Copy EK hash ${certified.ekHash}` })).toBeVisible();
    await expect(detail).toContainText(/EK certificate issued by .*CN=E2E Unknown TPM Vendor/);
    // No vendor root is configured on this server, so the certificate parses but does not chain.
    await expect(detail).toContainText('not vendor-rooted:');
    await expect(detail).toContainText(akStatementOf(certified));
    await expect(detail).not.toContainText('no EK certificate');

    await expect(page.getByTestId('queue-selection')).toHaveText(`Current: ${certifiedId}`);
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve request' });
    await dialog.getByLabel('Reason').fill('TPM intake, rack 3');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await expect(dialog).toBeHidden();
    await expect(requestRow(page, certifiedId)).toHaveAttribute('data-state', 'approved');

    // The machine's next run presents the saved CSR the approval names, and joins.
    const joined = await agentJoin(page.request, scope, certified);
    expect(joined.code, joined.stdout + joined.stderr).toBe(0);
    const nodeId = /^Joined as node (node_\S+) \(site /.exec(joined.stdout)?.[1];
    expect(nodeId, joined.stdout).toBeTruthy();
    expect(joined.stdout).toContain('its key is held by the TPM');
    await expect(requestRow(page, certifiedId)).toHaveAttribute('data-state', 'consumed', { timeout: 15_000 });
    const nodes = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
    });
    expect(nodes.items.map((n) => n.id)).toEqual([nodeId]);
    // The other machine still waits.
    await expect(requestRow(page, bareId)).toHaveAttribute('data-state', 'pending');
  } finally {
    for (const machine of machines) {
      await machine.swtpm.stop();
      rmSync(machine.identityDir, { recursive: true, force: true });
    }
  }
});
