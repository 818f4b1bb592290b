import { describe, expect, it } from 'vitest';
import { formatOfName, splitImport } from './expected-import-parts';

describe('splitImport', () => {
  it('repeats the CSV header in every part and keeps the rows numbered from the first data row', () => {
    const csv = ['mac,pool', 'a,1', '', 'b,2', 'c,3'].join('\n');
    expect(splitImport('csv', csv, 2)).toEqual([
      { content: 'mac,pool\na,1\nb,2', offset: 0, rows: 2 },
      { content: 'mac,pool\nc,3', offset: 2, rows: 1 },
    ]);
  });
  it('slices a JSON array, and leaves what is not one for the server to refuse', () => {
    expect(
      splitImport('json', JSON.stringify([{ a: 1 }, { a: 2 }, { a: 3 }]), 2).map((p) => [JSON.parse(p.content).length, p.offset]),
    ).toEqual([
      [2, 0],
      [1, 2],
    ]);
    expect(splitImport('json', '{"a":1}')).toEqual([{ content: '{"a":1}', offset: 0, rows: 0 }]);
    expect(formatOfName('machines.JSON')).toBe('json');
    expect(formatOfName('machines.csv')).toBe('csv');
  });
});
