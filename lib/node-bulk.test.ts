import { describe, expect, it } from 'vitest';
import { NODE_BULK_PAGE, type NodeBulkResult } from '@/protocol/api/node-bulk-schemas';
import { bulkSummary, parseLabelList, runNodeBulk } from './node-bulk';

const page = (changed: string[], nextAfter: string | null = null): NodeBulkResult => ({ changed, unchanged: [], skipped: [], nextAfter });

describe('runNodeBulk', () => {
  it('sends the selected ids in pages of the server’s size, and reports progress after each', async () => {
    const ids = Array.from({ length: NODE_BULK_PAGE + 5 }, (_, i) => `node_${String(i).padStart(3, '0')}`);
    const sent: string[][] = [];
    const progress: number[] = [];
    const result = await runNodeBulk(
      async (input) => {
        sent.push(input.nodeIds!);
        return page(input.nodeIds!);
      },
      { tenantId: 'tnt_a', nodeIds: ids },
      { action: 'cordon' },
      (done) => progress.push(done),
    );
    expect(sent.map((s) => s.length)).toEqual([NODE_BULK_PAGE, 5]);
    expect(progress).toEqual([NODE_BULK_PAGE, NODE_BULK_PAGE + 5]);
    expect(result.changed).toEqual(ids);
  });

  it('walks a filter with the cursor the server answers until it answers none', async () => {
    const afters: Array<string | undefined> = [];
    const answers = [page(['node_a', 'node_b'], 'node_b'), page(['node_c'])];
    const result = await runNodeBulk(
      async (input) => {
        afters.push(input.after);
        expect(input.matching).toEqual({ poolId: 'pool_x' });
        return answers.shift()!;
      },
      { tenantId: 'tnt_a', matching: { poolId: 'pool_x' } },
      { action: 'set-labels', set: { rack: 'c7' } },
      () => {},
    );
    expect(afters).toEqual([undefined, 'node_b']);
    expect(result.changed).toEqual(['node_a', 'node_b', 'node_c']);
  });
});

describe('labels typed in the bulk dialog', () => {
  it('reads key=value lists and names the first entry that is not one', () => {
    expect(parseLabelList('rack=c7, env=prod')).toEqual({ labels: { rack: 'c7', env: 'prod' } });
    expect(parseLabelList('rack=c7 nope')).toEqual({ error: expect.stringContaining('nope') });
  });
  it('summarises what changed, what already was so and what was skipped', () => {
    expect(
      bulkSummary('Cordoned', 3, {
        changed: ['a'],
        unchanged: ['b'],
        skipped: [{ nodeId: 'c', reason: 'not permitted' }],
        nextAfter: null,
      }),
    ).toBe('Cordoned 1 of 3 nodes; 1 already so; 1 skipped (not permitted).');
  });
});
