import { readFileSync } from 'node:fs';

const TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user + system) a process has used so far, from /proc; 0 when unreadable. */
export function processCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}

/** CPU seconds of PostgreSQL: the postmaster named in its pid file and all its children (the backends). */
export function postgresCpuSeconds(postmasterPid: number): number {
  let total = processCpuSeconds(postmasterPid);
  try {
    const children = readFileSync(`/proc/${postmasterPid}/task/${postmasterPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    for (const child of children) total += processCpuSeconds(Number(child));
  } catch {
    // no children file: count the postmaster alone
  }
  return total;
}
