import { createPrivateKey } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signEnvelope } from '../../protocol/envelope';
import { parseCommandResult } from '../../protocol/command-wire';
import { trustGeneration } from '../../test/trust-fixture';
import { REPLAY_FILE, ReplayStore } from './replay-store';
import { CommandRunner } from './runner';

// A replay file that exists but cannot be used (unreadable, or not a replay file) is never taken as "no ids":
// the agent refuses every command until the file is repaired or removed, and leaves the file as it is.

const NODE = 'node_replay1';
const trust = trustGeneration();
const NOW = 1_765_000_000;
/** The agent's state directory of one test, and what it logged. */
let dir = '';
const lines: string[] = [];
beforeEach(async () => {
  lines.length = 0;
  dir = await mkdtemp(path.join(tmpdir(), 'replay-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
const command = () =>
  signEnvelope(
    {
      status: 'command',
      commandId: `cmd_r${(++n).toString(16).padStart(20, '0')}`,
      nodeId: NODE,
      kind: 'bcd.doctor',
      args: {},
      notAfter: NOW + 60,
    },
    createPrivateKey(trust.bundle.commandCa.privateKeyPem),
  );

async function agentWith(replay: ReplayStore) {
  const ran: string[] = [];
  const answers: Array<ReturnType<typeof parseCommandResult>> = [];
  const on = {
    post: async (_: string, text: string) => {
      answers.push(parseCommandResult(Buffer.from(text)));
      return { status: 204, body: Buffer.alloc(0) };
    },
  };
  const doctor = async () => (ran.push('bcd.doctor'), { ok: true });
  const runner = new CommandRunner({
    nodeId: () => NODE,
    commandTrustBundle: () => trust.bundle.commandTrustBundle,
    replay,
    basePath: '/api/compute',
    log: (line) => lines.push(line),
    now: () => NOW * 1000,
    handlers: { 'bcd.doctor': doctor, 'bcd.renew': doctor, 'trust.refresh': doctor },
  });
  const send = async () => {
    runner.onEvent(command(), on);
    await runner.idle();
  };
  return { ran, answers, send };
}

describe('an unusable replay file', () => {
  it('a file that is not a replay file: every command is refused, the file kept; removed, commands run again', async () => {
    const file = path.join(dir, REPLAY_FILE);
    await writeFile(file, '{"format":1,"commands":', { mode: 0o600 });
    const replay = await ReplayStore.open(dir, (line) => lines.push(line));
    expect(replay.unusable()).not.toBeNull();
    const agent = await agentWith(replay);
    await agent.send();
    await agent.send();
    expect(agent.ran).toEqual([]);
    expect(agent.answers).toEqual([
      { status: 'rejected', output: { reason: 'replay-store-unusable' } },
      { status: 'rejected', output: { reason: 'replay-store-unusable' } },
    ]);
    expect(await readFile(file, 'utf8')).toBe('{"format":1,"commands":');
    expect(lines.filter((l) => l.includes('commands are refused until it is repaired or removed'))).toHaveLength(1);
    // The operator removes it: the next read finds none, and commands run (and are recorded) again.
    await rm(file);
    await expect.poll(() => (replay.unusable(), replay.unusable())).toBeNull();
    await agent.send();
    expect(agent.ran).toEqual(['bcd.doctor']);
    expect(JSON.parse(await readFile(file, 'utf8')).format).toBe(1);
  });

  it('a file that cannot be read is refused too; repaired, its ids are kept', async () => {
    // A directory where the file should be: reading it fails whoever the agent runs as.
    await mkdir(path.join(dir, REPLAY_FILE));
    const replay = await ReplayStore.open(dir, (line) => lines.push(line));
    expect(replay.unusable()).toMatch(/cannot be read/);
    const agent = await agentWith(replay);
    await agent.send();
    expect(agent.ran).toEqual([]);
    await rm(path.join(dir, REPLAY_FILE), { recursive: true });
    await writeFile(path.join(dir, REPLAY_FILE), JSON.stringify({ format: 1, commands: { cmd_kept: NOW + 60 } }), { mode: 0o600 });
    await expect.poll(() => (replay.unusable(), replay.unusable())).toBeNull();
    expect(replay.has('cmd_kept')).toBe(true);
  });
});
