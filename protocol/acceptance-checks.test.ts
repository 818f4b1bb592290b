import { describe, expect, it } from 'vitest';
import { evaluateChecks } from './acceptance-checks';

const joined = {
  productUuid: '4C4C4544-0031-3510-8052-B4C04F4E5632',
  productSerial: 'SN-7701',
  macs: ['3c:ec:ef:12:34:56'],
  gpuUuids: ['GPU-1', 'GPU-2'],
};

describe('evaluateChecks', () => {
  it('identity: the same identifiers in any case and separator pass; a lost MAC or GPU, or a new serial, fail', () => {
    const spec = [{ check: 'identity' as const }];
    const same = {
      productUuid: '4c4c4544003135108052b4c04f4e5632',
      productSerial: 'sn-7701',
      macs: ['3C-EC-EF-12-34-56', '3c:ec:ef:99:99:99'],
      gpuUuids: ['GPU-2', 'GPU-1'],
    };
    expect(evaluateChecks(spec, [{ check: 'identity', value: same }], joined)[0]!.passed).toBe(true);
    expect(evaluateChecks(spec, [{ check: 'identity', value: { ...same, macs: [] } }], joined)[0]).toMatchObject({
      passed: false,
      message: 'identifiers differ from the join claims: macs',
    });
    expect(
      evaluateChecks(spec, [{ check: 'identity', value: { ...same, productSerial: 'SN-1', gpuUuids: ['GPU-1'] } }], joined)[0]!.message,
    ).toBe('identifiers differ from the join claims: productSerial, gpuUuids');
  });

  it('thresholds, timeouts and unreported checks', () => {
    const specs = [
      { check: 'min-cpus' as const, min: 4 },
      { check: 'min-memory' as const, minGiB: 1 },
      { check: 'gpu-count' as const, min: 1 },
    ];
    const results = evaluateChecks(
      specs,
      [
        { check: 'min-cpus', value: 4 },
        { check: 'min-memory', error: 'timed out after 30 s' },
      ],
      joined,
    );
    expect(results).toEqual([
      { check: 'min-cpus', passed: true, message: '4 CPUs (at least 4)' },
      { check: 'min-memory', passed: false, message: 'timed out after 30 s' },
      { check: 'gpu-count', passed: false, message: 'not reported by the agent' },
    ]);
  });
});
