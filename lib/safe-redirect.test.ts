import { describe, expect, it } from 'vitest';
import { safeRedirectPath } from './safe-redirect';

describe('safeRedirectPath', () => {
  it('keeps same-origin paths', () => {
    expect(safeRedirectPath('/pools?tenant=tnt_1')).toBe('/pools?tenant=tnt_1');
  });
  it('refuses other origins and odd paths', () => {
    for (const value of ['https://evil.example/', '//evil.example', '/\\evil.example', 'pools', '/x\ny', '', null, undefined]) {
      expect(safeRedirectPath(value)).toBe('/');
    }
  });
});
