import { describe, expect, it } from 'vitest';
import { parseStaleForm } from './stale-nodes-form';

describe('parseStaleForm', () => {
  it('accepts whole days from 1 to 365 for both steps', () => {
    expect(parseStaleForm({ cordonAfterDays: ' 7 ', retireAfterDays: '1' })).toEqual({
      policy: { cordonAfterDays: 7, retireAfterDays: 1 },
      errors: {},
    });
    expect(parseStaleForm({ cordonAfterDays: '365', retireAfterDays: '365' }).policy).toEqual({
      cordonAfterDays: 365,
      retireAfterDays: 365,
    });
  });

  it('names each bad field at once: empty, zero, too many, fractional, not a number', () => {
    expect(parseStaleForm({ cordonAfterDays: '', retireAfterDays: '0' })).toEqual({
      policy: null,
      errors: { cordonAfterDays: 'Enter a number of days', retireAfterDays: 'retireAfterDays is at least 1 day' },
    });
    expect(parseStaleForm({ cordonAfterDays: '366', retireAfterDays: '1.5' }).errors).toEqual({
      cordonAfterDays: 'cordonAfterDays is at most 365 days',
      retireAfterDays: 'retireAfterDays is a whole number of days',
    });
    expect(parseStaleForm({ cordonAfterDays: 'seven', retireAfterDays: '3' }).errors).toEqual({
      cordonAfterDays: 'Enter a whole number of days',
    });
  });
});
