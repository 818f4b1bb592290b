import { describe, expect, it } from 'vitest';
import { newMachineRoot, run } from '../../test/bcd-build';
import { useLifecycleDeployment } from '../../test/daemon/lifecycle-cli';
import { joinPinArgs, NO_NODE, nodeIdOf } from '../../test/daemon/machine';
import type { Swtpm } from '../../test/swtpm';

// joining.md's runbook "TPM replaced" from the CLI end to end: every `better-compute nodes …` call is the real
// CLI as a process (bin/better-compute.mjs) with an API key against the production server (test/server-main.ts)
// and a real gateway; the machine is the built bcd joined with `--attestor tpm` on swtpm, then given another.

const lc = useLifecycleDeployment('nodes_tpm_replaced_cli', 'CN=Lifecycle Test TPM Vendor,O=Better Compute Tests');
const { env, nodesCli, eventsOf, auditOf, actor, vendorTpm } = lc;

describe('runbook: TPM replaced (a new EK)', () => {
  const tpmEnv = (root: string, tpm: Swtpm) => env(root, { PATH: NO_NODE, BCD_TPM: tpm.address });
  const rejoin = (root: string, tpm: Swtpm) =>
    run(lc.bcd.binary, ['join', '--reset', '--yes', '--attestor', 'tpm', '--pool', lc.poolId, '--no-wait'], { env: tpmEnv(root, tpm) });

  /** A machine joined with `--attestor tpm` on a vendor-rooted TPM, whose TPM is then replaced by another. */
  async function machineWithReplacedTpm() {
    const root = newMachineRoot();
    const before = await vendorTpm();
    const serverArgs = ['--server', lc.server.url, ...joinPinArgs(lc.pins)];
    const first = await run(lc.bcd.binary, ['join', '--attestor', 'tpm', ...serverArgs, '--site', lc.siteId, '--pool', lc.poolId], {
      env: tpmEnv(root, before.tpm),
    });
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const oldNodeId = nodeIdOf(root);
    const oldNode = await lc.database.db.node.findUniqueOrThrow({ where: { id: oldNodeId } });
    expect(oldNode.hardwareKey).not.toBeNull();
    expect(await lc.database.db.tpmEkBinding.findUnique({ where: { ekSha256: before.ekHash } })).toMatchObject({ nodeId: oldNodeId });
    // Same machine (same DMI identifiers, so the same hardware key), another TPM: another EK.
    await before.tpm.stop();
    const after = await vendorTpm();
    return { root, before, after, oldNodeId, hardwareKey: oldNode.hardwareKey };
  }

  /** `nodes cordon` then `nodes delete --yes`, and what the delete frees. */
  async function cordonAndDelete(nodeId: string, ekHash: string) {
    expect((await nodesCli('cordon', nodeId)).code).toBe(0);
    const deleted = await nodesCli('delete', nodeId, '--yes', '--json');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.json()).toMatchObject({ id: nodeId, state: 'retired', cordoned: true });
    expect(await lc.database.db.tpmEkBinding.findUnique({ where: { ekSha256: ekHash } })).toBeNull();
    expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'retired', hardwareKey: null });
    expect((await eventsOf(nodeId, 'node.deleted')).map(([, data]) => data)).toEqual([{ nodeId, serials: expect.any(Array) }]);
    expect((await auditOf(nodeId)).filter(([, by]) => by === actor())).toEqual([
      ['node.cordoned', actor()],
      ['node.deleted', actor()],
    ]);
  }

  async function expectNewNode(root: string, oldNodeId: string, hardwareKey: unknown, ekHash: string) {
    const newNodeId = nodeIdOf(root);
    expect(newNodeId).not.toBe(oldNodeId);
    expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: newNodeId } })).toMatchObject({ identityGeneration: 1, hardwareKey });
    expect(await lc.database.db.tpmEkBinding.findUnique({ where: { ekSha256: ekHash } })).toMatchObject({ nodeId: newNodeId });
    expect((await eventsOf(newNodeId, 'node.joined')).map(([, data]) => data)).toEqual([
      expect.objectContaining({ attestor: 'tpm', reclaim: false }),
    ]);
    return newNodeId;
  }

  it(
    'cordon and delete --yes free the EK binding and the hardware key; the machine with its new TPM joins as a new node',
    { timeout: 240_000 },
    async () => {
      const m = await machineWithReplacedTpm();
      await cordonAndDelete(m.oldNodeId, m.before.ekHash);
      const joined = await rejoin(m.root, m.after.tpm);
      expect(joined.code, joined.stdout + joined.stderr).toBe(0);
      const newNodeId = await expectNewNode(m.root, m.oldNodeId, m.hardwareKey, m.after.ekHash);
      expect(joined.stdout).toContain(`joined: node ${newNodeId} in site ${lc.siteId}`);
    },
  );

  it(
    'a join tried before the delete is refused and changes nothing; after the delete the same command joins as a new node',
    { timeout: 240_000 },
    async () => {
      const m = await machineWithReplacedTpm();
      const refusalsBefore = await lc.database.db.event.count({ where: { type: 'security.join.refused' } });
      const early = await rejoin(m.root, m.after.tpm);
      expect(early.code, early.stdout + early.stderr).toBe(1);
      expect(early.stdout).toBe(`refused: Join refused (ACCESS_DENIED); EK hash ${m.after.ekHash}\n`);
      const refusals = await lc.database.db.event.findMany({ where: { type: 'security.join.refused' }, orderBy: { id: 'asc' } });
      expect(refusals.slice(refusalsBefore).map((e) => (e.data as { reason: string }).reason)).toEqual(['tpm:reclaim']);
      expect(nodeIdOf(m.root)).toBe(m.oldNodeId);
      expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: m.oldNodeId } })).toMatchObject({
        state: 'adopted',
        identityGeneration: 1,
        hardwareKey: m.hardwareKey,
      });
      expect(await lc.database.db.tpmEkBinding.findUnique({ where: { ekSha256: m.after.ekHash } })).toBeNull();

      await cordonAndDelete(m.oldNodeId, m.before.ekHash);
      const joined = await rejoin(m.root, m.after.tpm);
      expect(joined.code, joined.stdout + joined.stderr).toBe(0);
      await expectNewNode(m.root, m.oldNodeId, m.hardwareKey, m.after.ekHash);
    },
  );
});
