import type { ChildProcess } from 'node:child_process';
import type { PipelineStats } from '../server/join/admission-pipeline';
import { JOIN_STATS_PREFIX } from '../server/join/join-runtime';

/**
 * Reads the server's admission counters: the server runs with BETTER_COMPUTE_JOIN_STATS=1 and prints them
 * on one stdout line when sent SIGUSR2 (after its first join; before it, the signal would stop it).
 */
export class PipelineStatsReader {
  private buffered = '';
  private waiting: ((stats: PipelineStats) => void)[] = [];

  constructor(private readonly server: ChildProcess) {
    server.stdout!.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString();
      let newline: number;
      while ((newline = this.buffered.indexOf('\n')) >= 0) {
        const line = this.buffered.slice(0, newline);
        this.buffered = this.buffered.slice(newline + 1);
        if (line.startsWith(JOIN_STATS_PREFIX)) this.waiting.shift()?.(JSON.parse(line.slice(JOIN_STATS_PREFIX.length)) as PipelineStats);
      }
    });
  }

  read(): Promise<PipelineStats> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the server did not print its join pipeline counters')), 10_000);
      this.waiting.push((stats) => {
        clearTimeout(timer);
        resolve(stats);
      });
      this.server.kill('SIGUSR2');
    });
  }
}

export interface PipelineProfile {
  transactionsPerSecond: number;
  joinsPerTransaction: number;
  msPerTransaction: number;
  /** Transactions in flight on average (time in transactions over the phase's wall time). */
  meanInFlight: number;
  peakInFlight: number;
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/** The profile buckets of one phase, from the counters before and after it. */
export function pipelineProfile(before: PipelineStats, after: PipelineStats, seconds: number): PipelineProfile {
  const batches = after.batches - before.batches;
  const ms = after.batchMs - before.batchMs;
  return {
    transactionsPerSecond: round(batches / seconds, 1),
    joinsPerTransaction: batches ? round((after.joins - before.joins) / batches, 1) : 0,
    msPerTransaction: batches ? round(ms / batches, 2) : 0,
    meanInFlight: round(ms / 1000 / seconds, 2),
    peakInFlight: after.peakInFlight,
  };
}

export function formatPipelineProfile(p: PipelineProfile): string {
  return (
    `admission: ${p.transactionsPerSecond} transactions/s, ${p.joinsPerTransaction} joins per transaction, ` +
    `${p.msPerTransaction} ms per transaction, ${p.meanInFlight} in flight on average (peak since start ${p.peakInFlight})`
  );
}
