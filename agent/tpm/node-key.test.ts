import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeTpmAddress, makeNodeKeyInTpm, nodeKeyTpmOf } from './node-key';

describe('the node-key TPM', () => {
  it('is --tpm, else BCD_TPM, else /dev/tpmrm0; only a named one is explicit', () => {
    expect(nodeKeyTpmOf('swtpm:127.0.0.1:2321', { BCD_TPM: '/dev/tpm9' })).toEqual({ address: 'swtpm:127.0.0.1:2321', explicit: true });
    expect(nodeKeyTpmOf(undefined, { BCD_TPM: '/dev/tpm9' })).toEqual({ address: '/dev/tpm9', explicit: true });
    expect(nodeKeyTpmOf(undefined, { BCD_TPM: ' ' })).toEqual({ address: undefined, explicit: false });
    expect(nodeKeyTpmOf(undefined, {})).toEqual({ address: undefined, explicit: false });
    expect(describeTpmAddress(undefined)).toBe('/dev/tpmrm0');
    expect(describeTpmAddress('swtpm:[::1]:2321')).toBe('swtpm:[::1]:2321');
  });

  it('keeps the key in software when no TPM is named and /dev/tpmrm0 is absent, and fails for a named TPM that does not open', async () => {
    // This container has no TPM device: the default finds none.
    expect(existsSync('/dev/tpmrm0')).toBe(false);
    const warnings: string[] = [];
    expect(await makeNodeKeyInTpm({ address: undefined, explicit: false }, (line) => warnings.push(line))).toBeNull();
    expect(warnings).toEqual([]);
    await expect(makeNodeKeyInTpm({ address: '/nonexistent/tpm0', explicit: true })).rejects.toThrow(
      /cannot open the TPM at \/nonexistent\/tpm0/,
    );
  });
});
