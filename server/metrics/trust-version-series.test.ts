import { describe, expect, it } from 'vitest';
import { trustVersionSeries } from './shared-state';

const series = (rows: Array<{ version: number; count: number }>) =>
  Object.fromEntries(trustVersionSeries(rows).map((r) => [r.trust_version, r.count]));

describe('nodes by trust version', () => {
  it('gives the newest three versions a series each, lower ones "older", none "none"', () => {
    expect(
      series([
        { version: 0, count: 4 },
        { version: 2, count: 1 },
        { version: 3, count: 5 },
        { version: 7, count: 2 },
        { version: 6, count: 3 },
        { version: 5, count: 10 },
      ]),
    ).toEqual({ '7': 2, '6': 3, '5': 10, older: 6, none: 4 });
  });

  it('keeps "older" and "none" at 0, and stays bounded whatever versions nodes report', () => {
    expect(series([])).toEqual({ older: 0, none: 0 });
    expect(series([{ version: 1, count: 9 }])).toEqual({ '1': 9, older: 0, none: 0 });
    const many = Array.from({ length: 1_000 }, (_, i) => ({ version: i, count: 1 }));
    expect(trustVersionSeries(many)).toHaveLength(5);
  });
});
