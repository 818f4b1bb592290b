import { spawn } from 'node:child_process';
import path from 'node:path';

export interface CliRun {
  /** Lines written so far, to stderr and stdout. */
  stderr: string[];
  stdout: string[];
  /** The exit code, once the command finished. */
  done: Promise<number | null>;
  kill: () => void;
}

/** Runs `better-compute <args>` against the e2e server with `apiKey`, as an operator's shell would. */
export function startCli(args: string[], apiKey: string): CliRun {
  const child = spawn(process.execPath, [path.join(process.cwd(), 'bin/better-compute.mjs'), ...args], {
    // Simulated PXE machines retry a pending join after 1 s, not the server's 30 s (a run may override it).
    env: {
      BETTER_COMPUTE_SIM_RETRY_SECONDS: '1',
      ...process.env,
      BETTER_COMPUTE_URL: process.env.E2E_BASE_URL!,
      BETTER_COMPUTE_API_KEY: apiKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: CliRun = {
    stderr: [],
    stdout: [],
    done: new Promise((resolve) => child.on('close', resolve)),
    kill: () => child.kill(),
  };
  const collect = (into: string[]) => {
    let rest = '';
    return (chunk: Buffer) => {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      into.push(...lines);
    };
  };
  child.stderr.on('data', collect(run.stderr));
  child.stdout.on('data', collect(run.stdout));
  return run;
}
