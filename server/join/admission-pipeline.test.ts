import { describe, expect, it } from 'vitest';
import { AdmissionPipeline, holdKeys, type QueuedJoin } from './admission-pipeline';
import type { PreparedJoin } from './prepare';

/** A prepared join reduced to what the pipeline reads: its CSR key, machine and attestor. */
const join = (spki: string, machine: string | null = null, attestor = 'join-token') =>
  ({ spkiSha256: Buffer.from(spki), trustedKey: machine ? Buffer.from(machine) : null, attestor }) as unknown as PreparedJoin;

const turn = () => new Promise((resolve) => setImmediate(resolve));

interface Started {
  joins: PreparedJoin[];
  decided: () => void;
  finish: () => void;
}

/** A pipeline whose batches run until the test says they decided and finished. */
function controlled(maxBatch: number, maxInFlight: number, minOverlapBatch = 1) {
  const started: Started[] = [];
  const pipeline = new AdmissionPipeline(
    (batch, decided) =>
      new Promise<void>((resolve) => {
        started.push({
          joins: batch.map((entry) => entry.join),
          decided,
          finish: () => {
            for (const entry of batch) entry.resolve({ kind: 'error' });
            resolve();
          },
        });
      }),
    maxBatch,
    maxInFlight,
    minOverlapBatch,
  );
  const push = (j: PreparedJoin) => pipeline.push({ join: j, since: 0, resolve: () => {} } satisfies QueuedJoin);
  return { pipeline, started, push };
}

describe('AdmissionPipeline', () => {
  it('starts the next batch only once the leading one has decided, up to maxInFlight', async () => {
    const { pipeline, started, push } = controlled(2, 2);
    push(join('a'));
    push(join('b'));
    push(join('c'));
    await turn();
    expect(started.map((s) => s.joins.length)).toEqual([2]);
    push(join('d'));
    await turn();
    expect(started).toHaveLength(1); // the first batch still reads and decides
    started[0]!.decided();
    await turn();
    expect(started.map((s) => s.joins.length)).toEqual([2, 2]);
    push(join('e'));
    started[1]!.decided();
    await turn();
    expect(started).toHaveLength(2); // two in flight: the third waits for a slot
    started[0]!.finish();
    await turn();
    await turn();
    expect(started).toHaveLength(3);
    expect(pipeline.stats.peakInFlight).toBe(2);
    expect(pipeline.stats.batches).toBe(1);
  });

  it('holds a join of a machine, or a CSR key, that a batch in flight holds, until that batch ends', async () => {
    const { started, push } = controlled(8, 3);
    push(join('k1', 'm1'));
    await turn();
    push(join('k2', 'm1')); // the same machine, in flight
    push(join('k1', 'm9')); // the same CSR key (a replay), in flight
    push(join('k3', 'm3'));
    started[0]!.decided();
    await turn();
    expect(started[1]!.joins.map((j) => j.spkiSha256.toString())).toEqual(['k3']);
    started[0]!.finish();
    started[1]!.decided();
    await turn();
    await turn();
    expect(started[2]!.joins.map((j) => j.spkiSha256.toString())).toEqual(['k2', 'k1']);
  });

  it('starts a batch beside one in flight only once enough joins wait', async () => {
    const { started, push } = controlled(8, 3, 3);
    push(join('a'));
    await turn();
    started[0]!.decided();
    push(join('b'));
    push(join('c'));
    await turn();
    expect(started).toHaveLength(1); // two waiting: not worth a transaction beside the first
    push(join('d'));
    await turn();
    expect(started.map((s) => s.joins.length)).toEqual([1, 3]);
    started[0]!.finish();
    started[1]!.finish();
    await turn();
    push(join('e'));
    await turn();
    expect(started.map((s) => s.joins.length)).toEqual([1, 3, 1]); // nothing in flight: any batch starts
  });

  it('keeps two joins of one machine that wait together in one batch', async () => {
    const { started, push } = controlled(8, 3);
    push(join('k1', 'm1'));
    push(join('k2', 'm1'));
    await turn();
    expect(started[0]!.joins).toHaveLength(2);
  });

  it('lets at most one batch in flight hold discovery joins', () => {
    expect(holdKeys(join('k1', null, 'discovery'))).toContain('attestor:discovery');
    expect(holdKeys(join('k1', 'm1'))).not.toContain('attestor:discovery');
  });
});

describe('BETTER_COMPUTE_JOIN_IN_FLIGHT', () => {
  it('takes 1 to 8 and refuses anything else', async () => {
    const { joinInFlight } = await import('./join-runtime');
    expect(joinInFlight({})).toBeUndefined();
    expect(joinInFlight({ BETTER_COMPUTE_JOIN_IN_FLIGHT: '1' })).toBe(1);
    expect(joinInFlight({ BETTER_COMPUTE_JOIN_IN_FLIGHT: '8' })).toBe(8);
    for (const bad of ['0', '9', '2.5', 'two']) expect(() => joinInFlight({ BETTER_COMPUTE_JOIN_IN_FLIGHT: bad })).toThrow(/1 to 8/);
  });
});
