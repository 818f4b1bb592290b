import { describe, expect, it } from 'vitest';
import { measureChecks, type MachineProbe } from './measure';

const probe: MachineProbe = {
  claims: async () => ({ productUuid: 'u', productSerial: 's', macs: [], hostname: 'h' }),
  cpus: async () => 8,
  memoryBytes: () => new Promise(() => {}),
  gpus: async () => {
    throw new Error('nvidia-smi failed');
  },
};

describe('measureChecks', () => {
  it('measures each asked check within its timeout and reports what went wrong', async () => {
    const started = performance.now();
    const measured = await measureChecks(
      [
        { check: 'min-cpus', min: 4 },
        { check: 'min-memory', minGiB: 1, timeoutSeconds: 1 },
        { check: 'gpu-count', min: 1 },
        { check: 'nccl' },
        { check: 'identity' },
      ],
      probe,
    );
    expect(performance.now() - started).toBeLessThan(2_500);
    expect(measured).toEqual([
      { check: 'min-cpus', value: 8 },
      { check: 'min-memory', error: 'timed out after 1 s' },
      { check: 'gpu-count', error: 'nvidia-smi failed' },
      { check: 'nccl', error: 'this agent has no check named nccl' },
      {
        check: 'identity',
        value: { productUuid: 'u', productSerial: 's', boardSerial: undefined, chassisSerial: undefined, macs: [], gpuUuids: undefined },
      },
    ]);
  });
});
