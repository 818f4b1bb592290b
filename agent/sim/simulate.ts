import { randomBytes, randomUUID } from 'node:crypto';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { prepareJoinAttempt, sendJoin, type JoinAttempt, type JoinTrust } from '../join';
import { JoinRefusedError } from '../join-refused';
import { keepAliveFetch } from './http-post';
import { percentile } from './percentiles';

/** Claims of a simulated machine: distinct and trusted (a product UUID, a serial and a permanent MAC). */
export function simulatedClaims(index: number): HardwareClaims {
  // 3c:ec:ef is a real, globally administered OUI; the NIC part is random.
  const tail = randomBytes(3).toString('hex').match(/../g)!.join(':');
  return {
    productUuid: randomUUID(),
    productSerial: `SIM-${index}-${randomBytes(3).toString('hex')}`,
    macs: [`3c:ec:ef:${tail}`],
    hostname: `sim-${index}`,
  };
}

interface SimulationResult {
  admitted: number;
  refused: number;
  failed: number;
  latenciesMs: number[];
  elapsedMs: number;
  reasons: Record<string, number>;
}

export function summarize(result: SimulationResult) {
  return {
    admitted: result.admitted,
    refused: result.refused,
    failed: result.failed,
    p50Ms: round(percentile(result.latenciesMs, 50)),
    p99Ms: round(percentile(result.latenciesMs, 99)),
    joinsPerSecond: round((result.admitted / result.elapsedMs) * 1000),
    seconds: round(result.elapsedMs / 1000),
  };
}
const round = (n: number) => Math.round(n * 100) / 100;

/**
 * Joins simulated machines: `prepared` attempts (key, CSR, sealed token) are sent by `concurrency`
 * workers over keep-alive connections, each answer verified as an agent does. `onProgress` is called
 * after every join.
 */
export async function runJoins(options: {
  serverUrl: string;
  basePath?: string;
  trust: JoinTrust;
  attempts: JoinAttempt[];
  concurrency: number;
  onProgress?: (done: number) => void;
}): Promise<SimulationResult> {
  const result: SimulationResult = { admitted: 0, refused: 0, failed: 0, latenciesMs: [], elapsedMs: 0, reasons: {} };
  const client = keepAliveFetch(options.concurrency);
  let next = 0;
  let done = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < options.attempts.length) {
      const attempt = options.attempts[next++]!;
      const t0 = performance.now();
      try {
        await sendJoin({ serverUrl: options.serverUrl, basePath: options.basePath, attempt, trust: options.trust, fetch: client.fetch });
        result.admitted++;
      } catch (error) {
        const key = error instanceof JoinRefusedError ? `${error.status} ${error.serverCode}` : (error as Error).message;
        result.reasons[key] = (result.reasons[key] ?? 0) + 1;
        if (error instanceof JoinRefusedError && error.status === 403) result.refused++;
        else result.failed++;
      }
      result.latenciesMs.push(performance.now() - t0);
      options.onProgress?.(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  result.elapsedMs = performance.now() - started;
  client.close();
  return result;
}

/** Prepares `count` join attempts for one token or a list of tokens (one per attempt). */
export async function prepareAttempts(
  tokens: string[] | string,
  count: number,
  trust: JoinTrust,
  onProgress?: (done: number) => void,
): Promise<JoinAttempt[]> {
  const attempts: JoinAttempt[] = [];
  for (let i = 0; i < count; i++) {
    const token = typeof tokens === 'string' ? tokens : tokens[i]!;
    attempts.push(await prepareJoinAttempt({ token, trust, claims: simulatedClaims(i) }));
    onProgress?.(i + 1);
  }
  return attempts;
}
