import { describe, expect, it } from 'vitest';
import { csvField, csvRow } from './audit-csv';

describe('audit CSV', () => {
  it('quotes what must be quoted and doubles quotes', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField(null)).toBe('');
    expect(csvField({ reason: 'x' })).toBe('"{""reason"":""x""}"');
  });

  it('makes every value a spreadsheet would run inert with a leading apostrophe', () => {
    for (const start of ['=', '+', '-', '@', '\t', '\r']) {
      const value = `${start}HYPERLINK("http://evil.example","x")`;
      const field = csvField(value);
      // Unquoted, the field's first character is the apostrophe; quoted, the first inside the quote.
      expect(field.startsWith(`'${start}`) || field.startsWith(`"'${start}`), JSON.stringify(field)).toBe(true);
    }
    expect(csvField('=1+1')).toBe("'=1+1");
    expect(csvField('-5')).toBe("'-5");
    expect(csvField('a=b')).toBe('a=b');
  });

  it('ends each record with CRLF', () => {
    expect(csvRow(['a', '=b', 'c,d'])).toBe('a,\'=b,"c,d"\r\n');
  });
});
