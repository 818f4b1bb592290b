import type { ChildProcess } from 'node:child_process';
import type { PipelineProfile, PipelineStatsReader } from './join-pipeline-stats';
import { formatPipelineProfile } from './join-pipeline-stats';

/** A server process the join benchmark drives. */
export interface BenchServer {
  proc: ChildProcess;
  url: string;
  stats: PipelineStatsReader | null;
}

interface PhaseResult {
  joinsPerSecond: number;
  p99Ms: number;
  cpuMsPerJoin: { server: number; postgres: number; serverAndPostgres: number };
  pipeline: PipelineProfile | null;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : Math.round(((sorted[mid - 1]! + sorted[mid]!) / 2) * 1000) / 1000;
};

/**
 * Runs the shared-token phase `rounds` times on each of two servers, alternating which goes first (ABBA…),
 * so that the noise of a shared machine falls on both alike, and prints each side's medians.
 */
export async function compareServers(
  options: { rounds: number; agents: number; joins: number; labels: [string, string]; log: (line: string) => void },
  run: (side: 0 | 1) => Promise<PhaseResult>,
): Promise<void> {
  const results: [PhaseResult[], PhaseResult[]] = [[], []];
  for (let round = 0; round < options.rounds; round++) {
    const order: (0 | 1)[] = round % 2 ? [1, 0] : [0, 1];
    for (const side of order) {
      const result = await run(side);
      results[side].push(result);
      options.log(`round ${round + 1}, ${options.labels[side]}: ${JSON.stringify(result)}`);
    }
  }
  process.stdout.write(
    `\nA/B, shared token: ${options.agents} agents, ${options.joins} joins per round, ${options.rounds} rounds each, medians\n`,
  );
  for (const side of [0, 1] as const) {
    const r = results[side];
    process.stdout.write(
      `${options.labels[side].padEnd(40)} ${median(r.map((x) => x.joinsPerSecond))} joins/s  p99 ${median(r.map((x) => x.p99Ms))} ms  ` +
        `CPU per join: server ${median(r.map((x) => x.cpuMsPerJoin.server))} + PostgreSQL ${median(r.map((x) => x.cpuMsPerJoin.postgres))} = ${median(r.map((x) => x.cpuMsPerJoin.serverAndPostgres))} ms\n`,
    );
    const last = r[r.length - 1]?.pipeline;
    if (last) process.stdout.write(`${''.padEnd(40)} last round ${formatPipelineProfile(last)}\n`);
  }
}
