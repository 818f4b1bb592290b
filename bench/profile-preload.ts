/**
 * Preloaded (`--import`) into the API and gateway processes a benchmark starts with `--profile DIR`: a V8
 * CPU profiler on the process's main thread, started and stopped over the IPC channel so that one profile
 * covers one measured phase. Does nothing unless BENCH_PROFILE_DIR is set and the process has an IPC channel.
 *
 * Messages from the benchmark: `{ benchProfile: 'start', name }` answers `{ benchProfile: 'started', name }`;
 * `{ benchProfile: 'stop', name }` writes `<dir>/<name>-<role>.cpuprofile` and answers
 * `{ benchProfile: 'written', name, file }`. The profile is written while the process runs, so how the
 * process later exits (a SIGTERM handler, a kill) does not matter.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

const dir = process.env.BENCH_PROFILE_DIR;
const role = process.env.BENCH_PROFILE_ROLE ?? `pid${process.pid}`;
// Microseconds between samples: V8's default (1 ms) gives too few samples per phase of a few seconds.
const interval = Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 250);

interface ProfileMessage {
  benchProfile: 'start' | 'stop';
  name: string;
}
const isProfileMessage = (m: unknown): m is ProfileMessage =>
  typeof m === 'object' && m !== null && 'benchProfile' in m && typeof (m as { name?: unknown }).name === 'string';

if (dir && process.send) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval });
  // The channel must not keep the process alive by itself (the product decides when it exits).
  process.channel?.unref();
  process.on('message', (message: unknown) => {
    if (!isProfileMessage(message)) return;
    const { name } = message;
    if (message.benchProfile === 'start') {
      void session.post('Profiler.start').then(() => process.send?.({ benchProfile: 'started', name }));
      return;
    }
    void (async () => {
      const { profile } = await session.post('Profiler.stop');
      const file = path.join(dir, `${name}-${role}.cpuprofile`);
      await writeFile(file, JSON.stringify(profile));
      process.send?.({ benchProfile: 'written', name, file });
    })();
  });
}
