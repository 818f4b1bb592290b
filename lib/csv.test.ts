import { describe, expect, it } from 'vitest';
import { CSV_LINE_BREAK, csvField, csvRow } from './csv';

describe('csvField', () => {
  it('leaves plain text alone', () => {
    expect(csvField('rack-b-07')).toBe('rack-b-07');
    expect(csvField('')).toBe('');
    expect(csvField('a b')).toBe('a b');
  });

  it('prefixes a quote to every value a spreadsheet would run, and quotes it', () => {
    expect(csvField('=1+1')).toBe(`"'=1+1"`);
    expect(csvField('+1')).toBe(`"'+1"`);
    expect(csvField('-2')).toBe(`"'-2"`);
    expect(csvField('@SUM(A1)')).toBe(`"'@SUM(A1)"`);
    expect(csvField('\t=1')).toBe(`"'\t=1"`);
    expect(csvField('\r=1')).toBe(`"'\r=1"`);
    expect(csvField('=HYPERLINK("http://x.example","y")')).toBe(`"'=HYPERLINK(""http://x.example"",""y"")"`);
  });

  it('quotes commas, double quotes and line breaks (RFC 4180)', () => {
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('cr\rhere')).toBe('"cr\rhere"');
  });

  it('only looks at the first character for formulas', () => {
    expect(csvField('a=1')).toBe('a=1');
    expect(csvField('x-y')).toBe('x-y');
  });
});

describe('csvRow', () => {
  it('joins cells with commas; numbers stay numbers; null and undefined are empty', () => {
    expect(csvRow(['node', 3, -4, null, undefined, '=cmd'])).toBe(`node,3,-4,,,"'=cmd"`);
    expect(csvRow([Number.NaN, Number.POSITIVE_INFINITY])).toBe(',');
    expect(csvRow([])).toBe('');
  });

  it('builds a document whose cells a CSV reader gets back as text', () => {
    const doc = [csvRow(['serial', 'hostname']), csvRow(['S1', '=evil()'])].join(CSV_LINE_BREAK);
    expect(doc).toBe(`serial,hostname\r\nS1,"'=evil()"`);
  });
});
