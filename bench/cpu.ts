import { readFileSync } from 'node:fs';

const TICKS = 100; // USER_HZ on Linux

/**
 * CPU seconds (user + system) a process has used so far, with those of its children that exited and were
 * reaped (PostgreSQL backends of closed connections), from /proc; 0 when unreadable.
 */
function processCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / TICKS;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds of a process and its children: PostgreSQL's postmaster and its backends, or the server's
 * primary and its workers. Children that already exited are not counted.
 */
export function treeCpuSeconds(pid: number): number {
  let total = processCpuSeconds(pid);
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    for (const child of children) total += processCpuSeconds(Number(child));
  } catch {
    // no children file: count the process alone
  }
  return total;
}
