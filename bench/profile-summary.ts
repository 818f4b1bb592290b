/**
 * Summarises what a benchmark's `--profile DIR` wrote (bench/profile-phases.ts), as markdown tables:
 *
 *   npx tsx bench/profile-summary.ts DIR [--top 15]        every phase: CPU per operation of each process and
 *                                                          thread, PostgreSQL's statements, and each profile's
 *                                                          self time by group and by function
 *   npx tsx bench/profile-summary.ts FILE.cpuprofile [--ops N] [--top 15]   one profile
 *
 * Shares are of the profiled main thread's busy (non-idle) samples; ms/op multiplies them by that thread's
 * CPU per operation from /proc. Groups: `node: <area>` (Node's own JavaScript: tls, http2, crypto…), `npm:
 * <package>`, `ours: <folder>`, `wasm`, native functions (C++ bindings such as a signature or a TLS write,
 * called from JavaScript), `(program)` (native code with no JavaScript on the stack: OpenSSL's handshake and
 * record work driven from libuv callbacks, the inspector) and the garbage collector.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { summarise, table, type CpuProfile, type Summary } from './profile-summary-lib';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '15' }, ops: { type: 'string' }, root: { type: 'string', default: process.cwd() } },
});
const top = Number(values.top);
const root = path.resolve(values.root!);

interface PhaseRecord {
  name: string;
  operations: number;
  seconds: number;
  loadAverage: number[];
  processes: Record<string, { threads: Record<string, number>; total: number }>;
  postgres: {
    cpuSeconds: number;
    database: Record<string, number>;
    statements: Array<{
      query: string;
      toplevel?: boolean;
      calls: number;
      execMs: number;
      planMs: number;
      rows: number;
      walRecords: number;
    }>;
  };
}

const ms = (seconds: number, ops: number) => ((seconds * 1000) / ops).toFixed(3);
const PROFILER_THREAD = 'v8:ProfEvntProc';

function profileTables(summary: Summary, mainMsPerOp: number | undefined): string {
  const perBusyUs = mainMsPerOp === undefined ? undefined : mainMsPerOp / summary.busyUs;
  return [
    `Busy ${(summary.busyUs / 1000).toFixed(0)} ms of ${(summary.totalUs / 1000).toFixed(0)} ms sampled (${((summary.busyUs / summary.totalUs) * 100).toFixed(0)}% busy).`,
    '',
    'Self time by group:',
    '',
    table(summary.groups, summary.busyUs, top, perBusyUs),
    '',
    'Inclusive time by group (samples with the group anywhere on the stack; asynchronous continuations start a new stack):',
    '',
    table(summary.inclusive, summary.busyUs, top, perBusyUs),
    '',
    'Inclusive time of our functions:',
    '',
    table(summary.inclusiveOurs, summary.busyUs, top, perBusyUs),
    '',
    'Self time by function:',
    '',
    table(summary.functions, summary.busyUs, top, perBusyUs, true),
  ].join('\n');
}

function phaseReport(dir: string, phase: PhaseRecord): string {
  const ops = phase.operations;
  const out = [
    `## ${phase.name}: ${ops} operations in ${phase.seconds} s, load average ${phase.loadAverage.join(' → ')}`,
    '',
    '| process | CPU ms/op (profiler thread excluded) | main thread | V8 workers (GC, compiler) | other threads |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const [role, p] of Object.entries(phase.processes)) {
    const t = p.threads;
    const profiler = t[PROFILER_THREAD] ?? 0;
    const other = p.total - profiler - (t.main ?? 0) - (t.V8Worker ?? 0);
    out.push(`| ${role} | ${ms(p.total - profiler, ops)} | ${ms(t.main ?? 0, ops)} | ${ms(t.V8Worker ?? 0, ops)} | ${ms(other, ops)} |`);
  }
  const pg = phase.postgres;
  const db = pg.database;
  out.push(`| PostgreSQL (all backends) | ${ms(pg.cpuSeconds, ops)} | | | |`, '');
  out.push(
    `PostgreSQL per operation: ${(db.xact_commit! / ops).toFixed(2)} commits, ${(db.tup_inserted! / ops).toFixed(2)} rows inserted, ${(db.tup_updated! / ops).toFixed(2)} updated, ${(db.tup_deleted! / ops).toFixed(2)} deleted, ${(db.tup_fetched! / ops).toFixed(1)} fetched, ${(db.blks_hit! / ops).toFixed(0)} buffer hits.`,
    '',
  );
  const statementMs = pg.statements.reduce((sum, s) => sum + s.execMs + s.planMs, 0);
  const sent = pg.statements.filter((s) => s.toplevel !== false).reduce((sum, s) => sum + s.calls, 0);
  out.push(`Statements sent by clients: ${(sent / ops).toFixed(2)} per operation.`, '');
  out.push(
    `Statements (pg_stat_statements; execution and planning are elapsed time inside PostgreSQL, lock waits included, ${(statementMs / ops).toFixed(3)} ms/op in all; nested: run inside another statement):`,
    '',
    '| calls/op | exec ms/op | plan ms/op | share | statement |',
    '| --- | --- | --- | --- | --- |',
  );
  for (const s of pg.statements.slice(0, top))
    out.push(
      `| ${(s.calls / ops).toFixed(2)} | ${(s.execMs / ops).toFixed(3)} | ${(s.planMs / ops).toFixed(3)} | ${(((s.execMs + s.planMs) / statementMs) * 100).toFixed(1)}% | ${s.toplevel === false ? '(nested) ' : ''}\`${s.query.slice(0, 110).replace(/\|/g, '\\|')}\` |`,
    );
  for (const role of Object.keys(phase.processes)) {
    const file = path.join(dir, `${phase.name}-${role}.cpuprofile`);
    if (!existsSync(file)) continue;
    const summary = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, root);
    const mainMsPerOp = ((phase.processes[role]!.threads.main ?? 0) * 1000) / ops;
    out.push('', `### ${phase.name}: ${role} main thread (${mainMsPerOp.toFixed(3)} ms/op)`, '', profileTables(summary, mainMsPerOp));
  }
  return out.join('\n');
}

const target = positionals[0];
if (!target) {
  process.stderr.write('usage: npx tsx bench/profile-summary.ts DIR | FILE.cpuprofile [--ops N] [--top 15]\n');
  process.exit(2);
}
if (statSync(target).isDirectory()) {
  const phases = readdirSync(target)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(path.join(target, f), 'utf8')) as PhaseRecord);
  process.stdout.write(phases.map((p) => phaseReport(target, p)).join('\n\n') + '\n');
} else {
  const summary = summarise(JSON.parse(readFileSync(target, 'utf8')) as CpuProfile, root);
  const ops = values.ops ? Number(values.ops) : undefined;
  process.stdout.write(profileTables(summary, ops ? summary.busyUs / 1000 / ops : undefined) + '\n');
}
