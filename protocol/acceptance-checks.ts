import { z } from 'zod';

/**
 * The built-in acceptance checks a pool's `policy.acceptance` lists (what bcd measures on the machine when the
 * control plane asks over the session), each with a timeout for the measurement. The control plane decides
 * from what bcd measured, so a threshold lives in one place.
 */
const timeoutSeconds = z.number().int().min(1).max(600).optional();
export const acceptanceCheckSpec = z.discriminatedUnion('check', [
  /** The machine's identifiers (product UUID, serials, permanent MACs, GPU UUIDs) still match its join claims. */
  z.strictObject({ check: z.literal('identity'), timeoutSeconds }),
  z.strictObject({ check: z.literal('min-cpus'), min: z.number().int().min(1).max(100_000), timeoutSeconds }),
  z.strictObject({ check: z.literal('min-memory'), minGiB: z.number().positive().max(1_000_000), timeoutSeconds }),
  z.strictObject({ check: z.literal('gpu-count'), min: z.number().int().min(0).max(1_024), timeoutSeconds }),
]);
type AcceptanceCheckSpec = z.infer<typeof acceptanceCheckSpec>;
export type BuiltInCheck = AcceptanceCheckSpec['check'];
/** The names of the checks bcd runs: a pool lists no other (nothing would run it and its nodes would wait). */
export const BUILT_IN_CHECKS = acceptanceCheckSpec.options.map((option) => option.shape.check.value) as readonly BuiltInCheck[];

/** What bcd measured for one check: its value, or why it could not (timed out, failed). */
export const measurementSchema = z.object({
  check: z.string().max(64),
  value: z.unknown().optional(),
  error: z.string().max(500).optional(),
});
type Measurement = z.infer<typeof measurementSchema>;

/** One check's verdict, as the run, the events and the AcceptanceFailed condition carry it. */
export interface CheckResult {
  check: string;
  passed: boolean;
  message: string;
}

interface JoinClaims {
  productUuid?: string | null;
  productSerial?: string | null;
  boardSerial?: string | null;
  chassisSerial?: string | null;
  macs?: string[];
  gpuUuids?: string[];
}

const GiB = 1024 ** 3;
const norm = (value: unknown) => (typeof value === 'string' ? value.trim().toLowerCase().replace(/[-:.]/g, '') : null);
const normList = (value: unknown) =>
  Array.isArray(value)
    ? value
        .map(norm)
        .filter((v): v is string => !!v)
        .sort()
    : [];

/** Which recorded identifiers differ between the join claims and what the machine reports now. */
function identityDifferences(joined: JoinClaims, now: JoinClaims): string[] {
  const changed: string[] = [];
  for (const field of ['productUuid', 'productSerial', 'boardSerial', 'chassisSerial'] as const) {
    if (norm(joined[field]) && norm(joined[field]) !== norm(now[field])) changed.push(field);
  }
  for (const field of ['macs', 'gpuUuids'] as const) {
    const before = normList(joined[field]);
    const after = new Set(normList(now[field]));
    // A recorded identifier that is gone: a NIC or GPU added since the join is no mismatch.
    if (before.some((id) => !after.has(id))) changed.push(field);
  }
  return changed;
}

/** Decides each check of `specs` from bcd's measurements; a check bcd did not report fails. */
export function evaluateChecks(
  specs: readonly AcceptanceCheckSpec[],
  measurements: readonly Measurement[],
  joinClaims: JoinClaims,
): CheckResult[] {
  return specs.map((spec) => {
    const measured = measurements.find((m) => m.check === spec.check);
    if (!measured) return { check: spec.check, passed: false, message: 'not reported by the agent' };
    if (measured.error) return { check: spec.check, passed: false, message: measured.error };
    const value = measured.value;
    switch (spec.check) {
      case 'identity': {
        if (typeof value !== 'object' || value === null) return { check: spec.check, passed: false, message: 'no identifiers reported' };
        const changed = identityDifferences(joinClaims, value as JoinClaims);
        return changed.length
          ? { check: spec.check, passed: false, message: `identifiers differ from the join claims: ${changed.join(', ')}` }
          : { check: spec.check, passed: true, message: 'identifiers match the join claims' };
      }
      case 'min-cpus':
        return typeof value === 'number' && value >= spec.min
          ? { check: spec.check, passed: true, message: `${value} CPUs (at least ${spec.min})` }
          : { check: spec.check, passed: false, message: `${String(value)} CPUs, need at least ${spec.min}` };
      case 'min-memory': {
        const gib = typeof value === 'number' ? Math.round((value / GiB) * 10) / 10 : null;
        return typeof value === 'number' && value >= spec.minGiB * GiB
          ? { check: spec.check, passed: true, message: `${gib} GiB of memory (at least ${spec.minGiB})` }
          : { check: spec.check, passed: false, message: `${gib ?? String(value)} GiB of memory, need at least ${spec.minGiB}` };
      }
      case 'gpu-count':
        return typeof value === 'number' && value >= spec.min
          ? { check: spec.check, passed: true, message: `${value} GPUs (at least ${spec.min})` }
          : { check: spec.check, passed: false, message: `${String(value)} GPUs, need at least ${spec.min}` };
    }
  });
}
