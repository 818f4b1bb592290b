import { spawn } from 'node:child_process';
import type { Run } from '../bcd-build';

/** `command args` running in the background with exactly `env`: its output so far, a wait for a line, and its end. */
export function startBackground(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const result: Run = { code: null, stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (result.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (result.stderr += d.toString()));
  const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ ...result, code })));
  return {
    output: () => result.stdout,
    /** The first match of `pattern` in its standard output; throws if it exits or `timeoutMs` passes first. */
    async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(result.stdout);
        if (match) return match;
        if (child.exitCode !== null || Date.now() > deadline)
          throw new Error(`${command} did not print ${pattern}: ${JSON.stringify(result)} (exit ${child.exitCode})`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    done,
    kill: (signal: NodeJS.Signals = 'SIGKILL') => child.kill(signal),
  };
}
