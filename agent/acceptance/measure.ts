import os from 'node:os';
import { readLinuxClaims } from '../claims-linux';
import type { HardwareClaims } from '../../protocol/hardware-claims';

/** What the built-in checks measure on the machine. Tests give a machine of their own. */
export interface MachineProbe {
  claims(): Promise<HardwareClaims>;
  cpus(): Promise<number>;
  memoryBytes(): Promise<number>;
  gpus(): Promise<number>;
}

const linuxProbe: MachineProbe = {
  claims: () => readLinuxClaims(),
  cpus: async () => os.availableParallelism(),
  memoryBytes: async () => os.totalmem(),
  gpus: async () => (await readLinuxClaims()).gpuUuids?.length ?? 0,
};

/** One measurement as bcd reports it (protocol/acceptance-checks.ts decides). */
interface Measurement {
  check: string;
  value?: unknown;
  error?: string;
}

const DEFAULT_TIMEOUT_SECONDS = 30;

function withTimeout<T>(work: Promise<T>, seconds: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${seconds} s`)), seconds * 1000);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/**
 * Measures each check the control plane asked for, all at once, each within its own timeout: the machine's
 * identifiers (for `identity`), its CPUs, memory and GPUs. A check it does not know is reported as such.
 */
export async function measureChecks(checks: readonly unknown[], probe: MachineProbe = linuxProbe): Promise<Measurement[]> {
  return Promise.all(
    checks.map(async (raw): Promise<Measurement> => {
      const spec = (raw ?? {}) as { check?: unknown; timeoutSeconds?: unknown };
      const check = typeof spec.check === 'string' ? spec.check : 'unknown';
      const timeout = typeof spec.timeoutSeconds === 'number' ? spec.timeoutSeconds : DEFAULT_TIMEOUT_SECONDS;
      const measure: Record<string, () => Promise<unknown>> = {
        identity: async () => {
          const c = await probe.claims();
          return {
            productUuid: c.productUuid,
            productSerial: c.productSerial,
            boardSerial: c.boardSerial,
            chassisSerial: c.chassisSerial,
            macs: c.macs,
            gpuUuids: c.gpuUuids,
          };
        },
        'min-cpus': () => probe.cpus(),
        'min-memory': () => probe.memoryBytes(),
        'gpu-count': () => probe.gpus(),
      };
      const run = measure[check];
      if (!run) return { check, error: `this agent has no check named ${check}` };
      try {
        return { check, value: await withTimeout(run(), timeout) };
      } catch (error) {
        return { check, error: (error as Error).message.slice(0, 500) };
      }
    }),
  );
}
