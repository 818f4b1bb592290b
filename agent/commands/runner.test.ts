import { createPrivateKey, sign } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signEnvelope } from '../../protocol/envelope';
import { spkiPin } from '../../protocol/pins';
import { COMMAND_KINDS, MAX_COMMAND_OUTPUT_BYTES, parseCommandResult, type CommandKind } from '../../protocol/command-wire';
import { trustGeneration, type TrustGeneration } from '../../test/trust-fixture';
import { REPLAY_FILE, ReplayStore } from './replay-store';
import { CommandRunner, MAX_PENDING_COMMANDS, type CommandHandler } from './runner';

const NODE = 'node_cmd1';
const current: TrustGeneration = trustGeneration();
const rotated: TrustGeneration = trustGeneration();
const stranger: TrustGeneration = trustGeneration();
const commandKey = (g: TrustGeneration) => createPrivateKey(g.bundle.commandCa.privateKeyPem);
const NOW = 1_765_000_000;

let dir: string;
let lines: string[];
let posts: Array<{ path: string; result: ReturnType<typeof parseCommandResult> }>;
let counter = 0;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'commands-'));
  lines = [];
  posts = [];
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const session = {
  post: async (pathname: string, body: string) => {
    posts.push({ path: pathname, result: parseCommandResult(Buffer.from(body)) });
    return { status: 204, body: Buffer.alloc(0) };
  },
};

const body = (fields: Partial<{ commandId: string; nodeId: string; kind: string; notAfter: number }> = {}) => ({
  status: 'command',
  commandId: `cmd_${(++counter).toString(16).padStart(24, '0')}`,
  nodeId: NODE,
  kind: 'bcd.doctor',
  args: {},
  notAfter: NOW + 300,
  ...fields,
});
const signed = (value: object, by: TrustGeneration = current) => signEnvelope(value, commandKey(by));

async function runner(
  options: { bundle?: string[]; handlers?: Partial<Record<CommandKind, CommandHandler>>; now?: number; timeoutMs?: number } = {},
) {
  const calls: string[] = [];
  const handler =
    (kind: CommandKind): CommandHandler =>
    async () => {
      calls.push(kind);
      return kind === 'bcd.renew' ? { serial: '7f01' } : kind === 'bcd.doctor' ? { ok: true, checks: [] } : {};
    };
  const clock = { now: (options.now ?? NOW) * 1000 };
  const run = new CommandRunner({
    nodeId: () => NODE,
    commandTrustBundle: () => options.bundle ?? current.bundle.commandTrustBundle,
    replay: await ReplayStore.open(dir, (line) => lines.push(line)),
    basePath: '/api/compute',
    log: (line) => lines.push(line),
    now: () => clock.now,
    post: { retryDelayMs: () => 1 },
    timeoutMs: options.timeoutMs,
    handlers: {
      'bcd.doctor': options.handlers?.['bcd.doctor'] ?? handler('bcd.doctor'),
      'bcd.renew': options.handlers?.['bcd.renew'] ?? handler('bcd.renew'),
      'trust.refresh': options.handlers?.['trust.refresh'] ?? handler('trust.refresh'),
    },
  });
  return { run, calls, clock };
}

describe('CommandRunner', () => {
  it('runs each kind of protocol 1 signed by the command-signing key and answers on the session', async () => {
    const { run, calls } = await runner();
    const bodies = COMMAND_KINDS.map((kind) => body({ kind }));
    for (const b of bodies) run.onEvent(signed(b), session);
    await run.idle();
    expect(calls).toEqual([...COMMAND_KINDS]);
    expect(posts).toEqual([
      {
        path: `/api/compute/v1/commands/${bodies[0]!.commandId}/result`,
        result: { status: 'succeeded', output: { ok: true, checks: [] } },
      },
      { path: `/api/compute/v1/commands/${bodies[1]!.commandId}/result`, result: { status: 'succeeded', output: { serial: '7f01' } } },
      { path: `/api/compute/v1/commands/${bodies[2]!.commandId}/result`, result: { status: 'succeeded', output: {} } },
    ]);
  });

  it('answers a kind it does not run rejected, and a handler that throws failed', async () => {
    const { run } = await runner({ handlers: { 'bcd.doctor': async () => Promise.reject(new Error('the gateway is down')) } });
    const unknown = body({ kind: 'shell.exec' });
    const doctor = body();
    run.onEvent(signed(unknown), session);
    run.onEvent(signed(doctor), session);
    await run.idle();
    expect(posts.map((p) => [p.path.split('/')[5], p.result])).toEqual(
      expect.arrayContaining([
        [unknown.commandId, { status: 'rejected', output: { reason: 'unknown-kind' } }],
        [doctor.commandId, { status: 'failed', output: { error: 'the gateway is down' } }],
      ]),
    );
  });

  it('never runs or answers an envelope signed by another key, or a tampered body; logs without the body', async () => {
    const { run, calls } = await runner();
    const forged = body();
    run.onEvent(signed(forged, stranger), session);
    // A body changed after signing: the signature covers the original bytes.
    const original = signed(body({ kind: 'bcd.doctor' }));
    const tampered = Buffer.from(JSON.stringify({ ...body({ kind: 'bcd.renew' }), commandId: forged.commandId })).toString('base64url');
    run.onEvent({ ...original, body: tampered }, session);
    // Another node's key in the stranger's bundle is no help either; nor is an envelope with no signature.
    run.onEvent({ body: original.body }, session);
    await run.idle();
    expect(calls).toEqual([]);
    expect(posts).toEqual([]);
    expect(lines.filter((l) => l.startsWith('agent: ignored a command event'))).toHaveLength(3);
    expect(lines.join('\n')).not.toContain(forged.commandId);
  });

  it('answers rejected a command for another node, one past notAfter, and one whose body is not a command', async () => {
    const { run, calls } = await runner();
    const other = body({ nodeId: 'node_other' });
    const expired = body({ notAfter: NOW - 1 });
    const malformed = { ...body(), args: 'rm -rf /' };
    run.onEvent(signed(other), session);
    run.onEvent(signed(expired), session);
    run.onEvent(signed(malformed), session);
    run.onEvent(signed({ status: 'command' }), session);
    await run.idle();
    expect(calls).toEqual([]);
    expect(posts.map((p) => [p.path.split('/')[5], p.result?.output])).toEqual([
      [other.commandId, { reason: 'other-node' }],
      [expired.commandId, { reason: 'expired' }],
      [malformed.commandId, { reason: 'malformed' }],
    ]);
  });

  it('runs a commandId once: a replay is rejected, also after a restart with the same store', async () => {
    const first = await runner();
    const command = signed(body({ kind: 'bcd.renew' }));
    first.run.onEvent(command, session);
    first.run.onEvent(command, session);
    await first.run.idle();
    expect(first.calls).toEqual(['bcd.renew']);
    expect(posts.map((p) => p.result?.status).sort()).toEqual(['rejected', 'succeeded']);
    expect((await stat(path.join(dir, REPLAY_FILE))).mode & 0o777).toBe(0o600);

    const restarted = await runner();
    restarted.run.onEvent(command, session);
    await restarted.run.idle();
    expect(restarted.calls).toEqual([]);
    expect(posts.at(-1)!.result).toEqual({ status: 'rejected', output: { reason: 'replayed' } });
  });

  it('forgets ids whose notAfter passed (a replay of one is refused as expired)', async () => {
    const { run, clock } = await runner();
    const old = body({ notAfter: NOW + 10 });
    run.onEvent(signed(old), session);
    await run.idle();
    clock.now = (NOW + 11) * 1000;
    const fresh = body({ notAfter: NOW + 600 });
    run.onEvent(signed(fresh), session);
    await run.idle();
    const stored = JSON.parse(await readFile(path.join(dir, REPLAY_FILE), 'utf8')) as { commands: Record<string, number> };
    expect(Object.keys(stored.commands)).toEqual([fresh.commandId]);
    run.onEvent(signed(old), session);
    await run.idle();
    expect(posts.at(-1)!.result).toEqual({ status: 'rejected', output: { reason: 'expired' } });
  });

  it('accepts a rotated bundle: `sigs` by the new key, `sig` by a key the bundle no longer holds', async () => {
    const { run, calls } = await runner({ bundle: rotated.bundle.commandTrustBundle });
    const value = body();
    const envelope = signed(value, current);
    const bytes = Buffer.from(envelope.body, 'base64url');
    const sigOf = (g: TrustGeneration) => sign('sha256', bytes, { key: commandKey(g), dsaEncoding: 'ieee-p1363' }).toString('base64url');
    const pinOf = (g: TrustGeneration) => spkiPin(createPrivateKey(g.bundle.commandCa.privateKeyPem));
    // Only the old key's signature: the bundle dropped it.
    run.onEvent(envelope, session);
    run.onEvent({ ...envelope, sigs: [{ pin: pinOf(current), sig: envelope.sig }] }, session);
    // A `sigs` entry claiming the new key's pin with the old key's signature is no better.
    run.onEvent({ ...envelope, sigs: [{ pin: pinOf(rotated), sig: envelope.sig }] }, session);
    await run.idle();
    expect(calls).toEqual([]);
    run.onEvent(
      {
        ...envelope,
        sigs: [
          { pin: pinOf(current), sig: envelope.sig },
          { pin: pinOf(rotated), sig: sigOf(rotated) },
        ],
      },
      session,
    );
    await run.idle();
    expect(calls).toEqual(['bcd.doctor']);
    expect(posts).toHaveLength(1);
  });

  it('runs one command at a time, queues at most MAX_PENDING_COMMANDS and answers the rest rejected', async () => {
    let active = 0;
    let most = 0;
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { run } = await runner({
      handlers: {
        'bcd.doctor': async () => {
          active += 1;
          most = Math.max(most, active);
          await gate;
          active -= 1;
          return {};
        },
      },
    });
    const bodies = Array.from({ length: MAX_PENDING_COMMANDS + 4 }, () => body());
    for (const b of bodies) run.onEvent(signed(b), session);
    // Every event is taken (one running, the rest pending or refused) before the first command finishes.
    const rejected = () => posts.filter((p) => p.result?.status === 'rejected').length;
    for (let waited = 0; rejected() < bodies.length - MAX_PENDING_COMMANDS - 1 && waited < 10_000; waited += 10)
      await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    await run.idle();
    expect(most).toBe(1);
    const by = (status: string) => posts.filter((p) => p.result?.status === status).length;
    expect(by('succeeded')).toBe(MAX_PENDING_COMMANDS + 1);
    expect(posts.filter((p) => p.result?.status === 'rejected').map((p) => p.result?.output)).toEqual([
      { reason: 'busy' },
      { reason: 'busy' },
      { reason: 'busy' },
    ]);
  });

  it('caps an output at MAX_COMMAND_OUTPUT_BYTES and answers failed when a command outlives its time', async () => {
    const huge = { checks: Array.from({ length: 4000 }, (_, i) => ({ name: `c${i}`, detail: '"é€😀'.repeat(10) })) };
    let aborted = false;
    const { run } = await runner({
      timeoutMs: 50,
      handlers: {
        'bcd.doctor': async () => huge,
        'bcd.renew': (_b, signal) => new Promise(() => signal.addEventListener('abort', () => (aborted = true))),
      },
    });
    run.onEvent(signed(body()), session);
    run.onEvent(signed(body({ kind: 'bcd.renew' })), session);
    await run.idle();
    expect(posts[1]!.result).toEqual({ status: 'failed', output: { error: 'it did not finish within 50 ms' } });
    expect(aborted).toBe(true);
    const output = posts[0]!.result!.output;
    expect(Buffer.byteLength(JSON.stringify(output))).toBeLessThanOrEqual(MAX_COMMAND_OUTPUT_BYTES);
    expect(output).toMatchObject({ truncated: true });
    expect(JSON.stringify(huge).startsWith(output.partial as string)).toBe(true);
  });
});
