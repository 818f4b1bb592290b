import { describe, expect, it } from 'vitest';
import { GroupRunner } from './group';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('GroupRunner', () => {
  it('runs calls that arrive together as one group, and calls that arrive during a run as the next', async () => {
    const runs: number[][] = [];
    const group = new GroupRunner<number, number>(async (items) => {
      runs.push(items);
      await tick();
      return items.map((n) => n * 10);
    });
    const first = [1, 2, 3].map((n) => group.run(n));
    await new Promise((resolve) => setImmediate(resolve));
    const second = [4, 5].map((n) => group.run(n));
    expect(await Promise.all([...first, ...second])).toEqual([10, 20, 30, 40, 50]);
    expect(runs).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(group.stats).toEqual({ runs: 2, calls: 5 });
  });

  it('never puts two calls with a shared key in one group: the later waits for the next run', async () => {
    const runs: string[][] = [];
    const group = new GroupRunner<string, string>(
      async (items) => {
        runs.push(items);
        return items;
      },
      128,
      (item) => [item.split(':')[0]!],
    );
    await Promise.all(['a:1', 'b:1', 'a:2', 'c:1', 'a:3'].map((item) => group.run(item)));
    expect(runs).toEqual([['a:1', 'b:1', 'c:1'], ['a:2'], ['a:3']]);
  });

  it('caps a group at maxBatch and rejects every call of a run that throws', async () => {
    const sizes: number[] = [];
    const group = new GroupRunner<number, number>(async (items) => {
      sizes.push(items.length);
      if (items.includes(99)) throw new Error('boom');
      return items;
    }, 2);
    const results = await Promise.allSettled([1, 2, 3, 99].map((n) => group.run(n)));
    expect(sizes).toEqual([2, 2]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
  });
});
