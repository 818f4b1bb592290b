/**
 * Pure logic of bench/profile-summary.ts: self and inclusive time of a V8 .cpuprofile by function and by
 * group (Node's own modules by area, npm packages, this repository's folders, V8 and native code outside JS).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Sampled time (microseconds) of one function or group. */
interface Row {
  name: string;
  group: string;
  us: number;
}
export interface Summary {
  /** Every sample's time, idle included. */
  totalUs: number;
  idleUs: number;
  /** Non-idle time: the shares below are of this. */
  busyUs: number;
  functions: Row[];
  groups: Row[];
  /** Time of the samples with at least one frame of the group on the stack (a group counted once per sample). */
  inclusive: Row[];
  /** The same for each of our functions (files under the root). */
  inclusiveOurs: Row[];
}

const IDLE = '(idle)';
export const GC = 'V8: garbage collector';
const PROGRAM = 'native outside JS: (program)';
const NATIVE = 'native functions (C++ bindings)';

/** Which group a frame belongs to; `root` is the repository's directory (files under it are ours). */
export function groupOf(frame: Pick<CallFrame, 'functionName' | 'url'>, root: string): string {
  const { functionName, url } = frame;
  if (!url) {
    if (functionName === '(idle)') return IDLE;
    if (functionName === '(garbage collector)') return GC;
    if (functionName === '(program)' || functionName === '(root)') return PROGRAM;
    return NATIVE;
  }
  if (url.startsWith('node:')) {
    let rest = url.slice('node:'.length).replace(/^internal\//, '');
    if (rest.startsWith('deps/')) return `node: ${rest.split('/').slice(0, 2).join('/')}`;
    rest = rest.split('/')[0]!.replace(/\.js$/, '');
    // node:_tls_wrap, node:_http_server, node:_stream_readable: the area is the word after the underscore.
    if (rest.startsWith('_')) rest = rest.slice(1).split('_')[0]!;
    if (rest === 'stream') rest = 'streams';
    // Socket reads and writes (TLS and plain sockets alike).
    if (rest === 'stream_base_commons') rest = 'net';
    return `node: ${rest}`;
  }
  if (url.startsWith('wasm://')) return 'wasm';
  const marker = '/node_modules/';
  const at = url.lastIndexOf(marker);
  if (at >= 0) {
    const parts = url.slice(at + marker.length).split('/');
    return `npm: ${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  const file = url.replace(/^file:\/\//, '');
  const base = root.endsWith('/') ? root : `${root}/`;
  if (file.startsWith(base)) {
    const parts = file.slice(base.length).split('/');
    return `ours: ${parts.length > 2 ? parts.slice(0, 2).join('/') : parts.length === 2 ? parts[0] : '.'}`;
  }
  return 'other';
}

/** A function's name as the tables print it: `name file:line` (the file relative to `root`). */
function functionLabel(frame: CallFrame, root: string): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return name;
  const base = root.endsWith('/') ? root : `${root}/`;
  const file = frame.url
    .replace(/^file:\/\//, '')
    .replace(base, '')
    .replace(/^(.*\/)?node_modules\//, '');
  // tsx's transpiled files report line 0 for every function: the file alone then.
  return frame.lineNumber > 0 ? `${name} ${file}:${frame.lineNumber + 1}` : `${name} ${file}`;
}

const sortRows = (rows: Map<string, Row>) => [...rows.values()].sort((a, b) => b.us - a.us || a.name.localeCompare(b.name));

/** Self time by function and group, and inclusive time by group, of a profile. */
export function summarise(profile: CpuProfile, root: string): Summary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // A sample lasts until the next one; the last one lasts as long as the average.
  const { samples, timeDeltas } = profile;
  const average = samples.length ? (profile.endTime - profile.startTime) / samples.length : 0;
  const self = new Map<number, number>();
  samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (i + 1 < timeDeltas.length ? Math.max(0, timeDeltas[i + 1]!) : average)));

  // A native function (a C++ binding: a signature's job, a socket write) is told by its nearest JavaScript
  // caller: `run ← sign node:internal/crypto/sig:…` in group `native via node: crypto`.
  const placed = new Map<number, { name: string; group: string }>();
  const place = (id: number) => {
    const known = placed.get(id);
    if (known) return known;
    const frame = byId.get(id)!.callFrame;
    let group = groupOf(frame, root);
    let name = functionLabel(frame, root);
    if (group === NATIVE) {
      let up = parent.get(id);
      while (up !== undefined && groupOf(byId.get(up)!.callFrame, root) === NATIVE) up = parent.get(up);
      const caller = up === undefined ? undefined : byId.get(up)!.callFrame;
      const callerGroup = caller ? groupOf(caller, root) : PROGRAM;
      group = callerGroup === PROGRAM ? `${NATIVE}, no JS caller` : `native via ${callerGroup}`;
      if (caller && callerGroup !== PROGRAM) name = `${name} ← ${functionLabel(caller, root)}`;
    }
    const result = { name, group };
    placed.set(id, result);
    return result;
  };

  const stackOurs = new Map<number, Set<string>>();
  const oursOnStack = (id: number): Set<string> => {
    const known = stackOurs.get(id);
    if (known) return known;
    const up = parent.get(id);
    const set = new Set(up === undefined ? [] : oursOnStack(up));
    const frame = byId.get(id)!.callFrame;
    if (groupOf(frame, root).startsWith('ours: ')) set.add(functionLabel(frame, root));
    stackOurs.set(id, set);
    return set;
  };
  const stackGroups = new Map<number, Set<string>>();
  const groupsOnStack = (id: number): Set<string> => {
    const known = stackGroups.get(id);
    if (known) return known;
    const up = parent.get(id);
    const set = new Set(up === undefined ? [] : groupsOnStack(up));
    // The root frame is on every stack: it is no group's time.
    if (up !== undefined) set.add(place(id).group);
    stackGroups.set(id, set);
    return set;
  };

  const functions = new Map<string, Row>();
  const groups = new Map<string, Row>();
  const inclusive = new Map<string, Row>();
  const inclusiveOurs = new Map<string, Row>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of self) {
    totalUs += us;
    if (groupOf(byId.get(id)!.callFrame, root) === IDLE) {
      idleUs += us;
      continue;
    }
    const { name, group } = place(id);
    const f = functions.get(name) ?? functions.set(name, { name, group, us: 0 }).get(name)!;
    f.us += us;
    const g = groups.get(group) ?? groups.set(group, { name: group, group, us: 0 }).get(group)!;
    g.us += us;
    for (const on of groupsOnStack(id)) {
      const r = inclusive.get(on) ?? inclusive.set(on, { name: on, group: on, us: 0 }).get(on)!;
      r.us += us;
    }
    for (const on of oursOnStack(id)) {
      const r = inclusiveOurs.get(on) ?? inclusiveOurs.set(on, { name: on, group: 'ours', us: 0 }).get(on)!;
      r.us += us;
    }
  }
  return {
    totalUs,
    idleUs,
    busyUs: totalUs - idleUs,
    functions: sortRows(functions),
    groups: sortRows(groups),
    inclusive: sortRows(inclusive),
    inclusiveOurs: sortRows(inclusiveOurs),
  };
}

/** A markdown table of rows: share of the busy time and, given `msPerBusyUs`, milliseconds per operation. */
export function table(rows: Row[], busyUs: number, top: number, msPerBusyUs?: number, withGroup = false): string {
  const head = [
    'share',
    ...(msPerBusyUs === undefined ? [] : ['ms/op']),
    withGroup ? 'function' : 'group',
    ...(withGroup ? ['group'] : []),
  ];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`];
  for (const r of rows.slice(0, top)) {
    const cells = [`${((r.us / busyUs) * 100).toFixed(1)}%`];
    if (msPerBusyUs !== undefined) cells.push((r.us * msPerBusyUs).toFixed(3));
    cells.push(r.name.replace(/\|/g, '\\|'));
    if (withGroup) cells.push(r.group);
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}
