import { describe, expect, it } from 'vitest';
import { PKI_KEY_KINDS, PKI_KEY_LABELS } from '../../server/pki/rotation/kinds';
import { PKI_KEY_KIND_LABELS, PKI_KEY_KIND_NAMES } from './pki-rotation-schemas';

describe('the PKI rotation schemas', () => {
  it('name the same five keys, with the same labels, as server/pki/rotation/kinds.ts', () => {
    expect(PKI_KEY_KIND_NAMES).toEqual(PKI_KEY_KINDS);
    expect(PKI_KEY_KIND_LABELS).toEqual(PKI_KEY_LABELS);
  });
});
