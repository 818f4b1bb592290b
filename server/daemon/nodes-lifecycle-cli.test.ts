import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../test/bcd-build';
import { useLifecycleDeployment } from '../../test/daemon/lifecycle-cli';
import { installedBcd, NO_NODE, nodeIdOf } from '../../test/daemon/machine';
import { createPool } from '../pools/pools';

// The node lifecycle from the CLI end to end: every `better-compute nodes …` call is the real CLI as a process
// (bin/better-compute.mjs) with an API key against the production server (test/server-main.ts) and a real gateway;
// the machines are the built bcd, installed by the generated script under a BCD_ROOT prefix. Covers joining.md's
// runbook "The node joined but stays adopting" (nodes-tpm-replaced-cli.test.ts: "TPM replaced").

const lc = useLifecycleDeployment('nodes_lifecycle_cli', 'CN=Lifecycle Test TPM Vendor,O=Better Compute Tests');
const { env, nodesCli, installedMachine, eventsOf, eventTypes, auditOf, actor, tokenOf } = lc;

describe('better-compute nodes cordon | uncordon | revoke-identity | delete --yes, each a process', () => {
  it(
    'changes the node as each verb says, with its audit entry and event, and refuses what the lifecycle forbids',
    { timeout: 240_000 },
    async () => {
      const { root, nodeId } = await installedMachine();
      expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'adopted', cordoned: false });

      const cordoned = await nodesCli('cordon', nodeId, '--json');
      expect(cordoned.code, cordoned.stderr).toBe(0);
      expect(cordoned.json()).toMatchObject({ id: nodeId, cordoned: true, state: 'adopted' });
      expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ cordoned: true });
      // Cordoning again changes nothing and records nothing.
      const again = await nodesCli('cordon', nodeId);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(new RegExp(`^ID +HOSTNAME +STATE +CORDONED[^\\n]*\\n${nodeId} +\\S+ +adopted +true `));

      // delete without --yes is a usage error before any request; an uncordoned node cannot be deleted.
      const unconfirmed = await nodesCli('delete', nodeId);
      expect(unconfirmed.code).toBe(2);
      expect(unconfirmed.stderr).toBe('error (INVALID_ARGUMENT): Deleting a node cannot be undone; confirm with --yes\n');
      const uncordoned = await nodesCli('uncordon', nodeId, '--json');
      expect(uncordoned.code, uncordoned.stderr).toBe(0);
      expect(uncordoned.json()).toMatchObject({ cordoned: false });
      const refused = await nodesCli('delete', nodeId, '--yes');
      expect(refused.code).toBe(5);
      expect(refused.stderr).toBe(`error (INVALID_STATE): Node ${nodeId} must be cordoned before it is deleted\n`);
      expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'adopted', cordoned: false });

      // revoke-identity: every certificate revoked; the machine's next renewal is refused and bcd says what to do.
      const liveSerials = (await lc.database.db.nodeCert.findMany({ where: { nodeId, revokedAt: null } })).map((c) => c.serial);
      expect(liveSerials).toHaveLength(1);
      const revoked = await nodesCli('revoke-identity', nodeId, '--json');
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.json()).toMatchObject({ id: nodeId, revokedSerials: liveSerials });
      expect(await lc.database.db.nodeCert.count({ where: { nodeId, revokedAt: null } })).toBe(0);
      const renewal = await run(installedBcd(root), ['node', '--once'], { env: env(root, { PATH: NO_NODE }) });
      expect(renewal.code).toBe(3);
      expect(renewal.stdout + renewal.stderr).toMatch(/bcd join --reset --yes/);
      const plain = await nodesCli('revoke-identity', nodeId);
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stdout).toContain('revoked: none (no live certificate)');

      // cordon + delete --yes: retired, certificates revoked, hardware key freed.
      expect((await nodesCli('cordon', nodeId)).code).toBe(0);
      const deleted = await nodesCli('delete', nodeId, '--yes', '--json');
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(deleted.json()).toMatchObject({ id: nodeId, state: 'retired' });
      expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'retired', hardwareKey: null });
      // A retired node takes no cordon change and no adopt.
      const afterDelete = await nodesCli('uncordon', nodeId);
      expect(afterDelete.code).toBe(5);
      expect(afterDelete.stderr).toBe(`error (INVALID_STATE): Node ${nodeId} is retired\n`);
      const adoptRetired = await nodesCli('adopt', nodeId);
      expect(adoptRetired.code).toBe(5);
      expect(adoptRetired.stderr).toMatch(/only an adopting node can be adopted/);
      const missing = await nodesCli('cordon', 'node_doesnotexist');
      expect(missing.code).toBe(3);

      // The default pool runs no acceptance checks: JoinService adopted the node at once.
      expect(await eventTypes(nodeId)).toEqual([
        'node.joined',
        'node.adopted',
        'node.cordoned',
        'node.uncordoned',
        'node.identity-revoked',
        'node.identity-revoked',
        'node.cordoned',
        'node.deleted',
      ]);
      expect((await eventsOf(nodeId, 'security.certificate-revoked')).map(([, data]) => data)).toEqual([
        { nodeId, serial: liveSerials[0], reason: 'revoked' },
      ]);
      expect((await auditOf(nodeId)).filter(([, by]) => by === actor())).toEqual([
        ['node.cordoned', actor()],
        ['node.uncordoned', actor()],
        ['node.identity-revoked', actor()],
        ['node.identity-revoked', actor()],
        ['node.cordoned', actor()],
        ['node.deleted', actor()],
      ]);

      // Freed: the same machine joins again as a new node with a token that does not allow a reclaim.
      const rejoin = await run(installedBcd(root), ['join', '--config', path.join(root, 'etc/bcd/config.toml'), '--reset', '--yes'], {
        env: env(root),
        input: await tokenOf(lc.poolId),
      });
      expect(rejoin.code, rejoin.stdout + rejoin.stderr).toBe(0);
      const newNodeId = nodeIdOf(root);
      expect(newNodeId).not.toBe(nodeId);
      expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: newNodeId } })).toMatchObject({
        state: 'adopted',
        identityGeneration: 1,
      });
    },
  );
});

describe('runbook: the node joined but stays adopting', () => {
  it(
    'acceptance fails on the machine (AcceptanceFailed, node.acceptance.failed); nodes adopt adopts it once',
    { timeout: 240_000 },
    async () => {
      const checkedPool = (
        await createPool(lc.database.db, lc.admin, {
          tenantId: lc.tenantId,
          siteId: lc.siteId,
          name: 'checked',
          agent: 'bcd',
          policy: { acceptance: [{ check: 'min-cpus', min: 100_000 }] },
        })
      ).id;
      const { root, nodeId } = await installedMachine(checkedPool);

      // bcd node, as bcd.service runs it, holds its session and runs the pool's check, which this machine fails.
      const daemon = spawn(installedBcd(root), ['node'], { env: env(root, { PATH: NO_NODE }), stdio: 'ignore' });
      try {
        const deadline = Date.now() + 90_000;
        while (!(await eventTypes(nodeId)).includes('node.acceptance.failed')) {
          if (daemon.exitCode !== null || Date.now() > deadline) throw new Error(`no node.acceptance.failed: ${await eventTypes(nodeId)}`);
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      } finally {
        daemon.kill('SIGTERM');
      }
      const shown = await nodesCli('get', nodeId, '--json');
      expect(shown.code, shown.stderr).toBe(0);
      const detail = shown.json() as { state: string; conditions: { type: string; status: boolean }[] };
      expect(detail.state).toBe('adopting');
      expect(detail.conditions).toContainEqual(expect.objectContaining({ type: 'AcceptanceFailed', status: true }));
      const table = await nodesCli('get', nodeId);
      expect(table.stdout).toMatch(/AcceptanceFailed/);

      const adopted = await nodesCli('adopt', nodeId);
      expect(adopted.code, adopted.stderr).toBe(0);
      expect(adopted.stdout).toMatch(new RegExp(`\\n${nodeId} +\\S+ +adopted +false `));
      expect(await lc.database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'adopted' });
      // Adopting an adopted node changes nothing and records nothing.
      const twice = await nodesCli('adopt', nodeId, '--json');
      expect(twice.code, twice.stderr).toBe(0);
      expect(twice.json()).toMatchObject({ state: 'adopted' });

      expect(await eventTypes(nodeId)).toEqual([
        'node.joined',
        'node.connected',
        'node.acceptance.started',
        'node.acceptance.failed',
        'node.adopted',
      ]);
      expect((await eventsOf(nodeId, 'node.adopted')).map(([, data]) => data)).toEqual([{ nodeId, by: 'operator' }]);
      expect((await auditOf(nodeId)).filter(([, by]) => by === actor())).toEqual([['node.adopted', actor()]]);
    },
  );
});
