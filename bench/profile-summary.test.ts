import { describe, expect, it } from 'vitest';
import { GC, groupOf, summarise, table, type CpuProfile } from './profile-summary-lib';

const ROOT = '/repo';
const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber, columnNumber: 0 });

/**
 * root ─┬─ (idle)                                   3 samples
 *       ├─ (garbage collector)                      1
 *       ├─ (program)                                1
 *       └─ onStreamRead node:internal/tls/wrap      1
 *            └─ handle server/gateway/relay.ts      1
 *                 └─ query node_modules/pg          2
 *                      └─ sign node:internal/crypto/sig   0
 *                           └─ run (native)         2
 */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 3, 4, 5] },
    { id: 2, callFrame: frame('(idle)') },
    { id: 3, callFrame: frame('(garbage collector)') },
    { id: 4, callFrame: frame('(program)') },
    { id: 5, callFrame: frame('onStreamRead', 'node:internal/tls/wrap', 10), children: [6] },
    { id: 6, callFrame: frame('handle', 'file:///repo/server/gateway/relay.ts'), children: [7] },
    { id: 7, callFrame: frame('query', 'file:///repo/node_modules/pg/lib/client.js', 41), children: [8] },
    { id: 8, callFrame: frame('sign', 'node:internal/crypto/sig', 157), children: [9] },
    { id: 9, callFrame: frame('run') },
  ],
  // Each sample lasts until the next one (100 µs apart); the last one lasts the average (1100 / 11 = 100 µs).
  samples: [2, 2, 2, 3, 4, 5, 6, 7, 7, 9, 9],
  timeDeltas: [0, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100],
  startTime: 0,
  endTime: 1100,
};

describe('profile summary', () => {
  it('groups frames by Node area, npm package, our folder, V8 and native code', () => {
    expect(groupOf(frame('x', 'node:internal/tls/wrap'), ROOT)).toBe('node: tls');
    expect(groupOf(frame('x', 'node:_tls_wrap'), ROOT)).toBe('node: tls');
    expect(groupOf(frame('x', 'node:internal/http2/core'), ROOT)).toBe('node: http2');
    expect(groupOf(frame('x', 'node:_http_server'), ROOT)).toBe('node: http');
    expect(groupOf(frame('x', 'node:internal/deps/undici/undici'), ROOT)).toBe('node: deps/undici');
    expect(groupOf(frame('x', 'node:internal/stream_base_commons'), ROOT)).toBe('node: net');
    expect(groupOf(frame('x', 'file:///repo/node_modules/@prisma/client/runtime/client.js'), ROOT)).toBe('npm: @prisma/client');
    expect(groupOf(frame('x', 'file:///repo/node_modules/a/node_modules/pg-protocol/dist/parser.js'), ROOT)).toBe('npm: pg-protocol');
    expect(groupOf(frame('x', 'file:///repo/server/renew/vouch.ts'), ROOT)).toBe('ours: server/renew');
    expect(groupOf(frame('x', 'file:///repo/protocol/jws.ts'), ROOT)).toBe('ours: protocol');
    expect(groupOf(frame('x', 'file:///elsewhere/x.js'), ROOT)).toBe('other');
    expect(groupOf(frame('x', 'wasm://wasm/abc'), ROOT)).toBe('wasm');
    expect(groupOf(frame('(garbage collector)'), ROOT)).toBe(GC);
  });

  it('adds self time by group and function, idle apart, native functions under their JavaScript caller', () => {
    const s = summarise(profile, ROOT);
    expect(s.totalUs).toBe(1100);
    expect(s.idleUs).toBe(300);
    expect(s.busyUs).toBe(800);
    const groups = Object.fromEntries(s.groups.map((g) => [g.name, g.us]));
    expect(groups).toEqual({
      'native via node: crypto': 200,
      'npm: pg': 200,
      [GC]: 100,
      'native outside JS: (program)': 100,
      'node: tls': 100,
      'ours: server/gateway': 100,
    });
    expect(s.functions.find((f) => f.name.startsWith('run'))).toEqual({
      name: 'run ← sign node:internal/crypto/sig:158',
      group: 'native via node: crypto',
      us: 200,
    });
    expect(s.functions.map((f) => f.name)).toContain('query pg/lib/client.js:42');
    expect(s.functions.map((f) => f.name)).toContain('handle server/gateway/relay.ts');
  });

  it('counts inclusive time once per sample for each group and each of our functions on the stack', () => {
    const s = summarise(profile, ROOT);
    const inclusive = Object.fromEntries(s.inclusive.map((g) => [g.name, g.us]));
    // tls: its own sample, the relay's, pg's two and the two under sign.
    expect(inclusive['node: tls']).toBe(600);
    expect(inclusive['ours: server/gateway']).toBe(500);
    expect(inclusive['npm: pg']).toBe(400);
    expect(inclusive['native via node: crypto']).toBe(200);
    // The root frame is on every stack but is nobody's time: (program) has its own sample only.
    expect(inclusive['native outside JS: (program)']).toBe(100);
    expect(s.inclusiveOurs).toEqual([{ name: 'handle server/gateway/relay.ts', group: 'ours', us: 500 }]);
  });

  it('prints shares of the busy time and milliseconds per operation', () => {
    const s = summarise(profile, ROOT);
    const lines = table(s.groups, s.busyUs, 2, 0.001).split('\n');
    expect(lines).toEqual([
      '| share | ms/op | group |',
      '| --- | --- | --- |',
      '| 25.0% | 0.200 | native via node: crypto |',
      '| 25.0% | 0.200 | npm: pg |',
    ]);
  });
});
