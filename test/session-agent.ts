import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { runSessionLoop } from '../agent/session/loop';
import type { AgentSession } from '../agent/session/session-client';
import { TrustStore } from '../agent/trust/store';
import type { TrustGeneration } from './trust-fixture';
import { FakeGateway } from './trust-gateway';

type LoopOptions = Parameters<typeof runSessionLoop>[0];

/** An agent's session loop as a test runs it: its log lines, the sessions it opened, and how to stop it. */
export interface RunningAgent {
  lines: string[];
  opened: AgentSession[];
  exit: Promise<number>;
  /** Aborts the loop; its exit code. */
  stop(): Promise<number>;
}

/**
 * Runs the agent's session loop (agent/session/loop.ts, as `agent run` and `bcd node` run it) until `stop`:
 * its log lines go to `lines` and the sessions it opens to `opened`.
 */
export function runAgentLoop(options: Omit<LoopOptions, 'signal' | 'log' | 'onSession'>, lines: string[] = []): RunningAgent {
  const controller = new AbortController();
  const opened: AgentSession[] = [];
  const exit = runSessionLoop({
    ...options,
    signal: controller.signal,
    log: (line) => lines.push(line),
    onSession: (session) => session && opened.push(session),
  });
  return { lines, opened, exit, stop: () => (controller.abort(), exit) };
}

/**
 * An agent of the installed pins of `installed` against {@link FakeGateway}s, for the calling test file: a
 * fresh identity directory and log for each test, and the gateways it started stopped after it.
 */
export function useFakeGatewayAgent(prefix: string, installed: TrustGeneration) {
  const gateways: FakeGateway[] = [];
  const agent = {
    dir: '',
    /** The agent's log lines in this test (its trust store's and its loops'). */
    lines: [] as string[],
    /** The trust store of the identity directory, of the installed pins. */
    trustStore: () =>
      TrustStore.open({
        dir: agent.dir,
        install: {
          servingCaPin: installed.servingCaPin,
          joinSigningKeyPin: installed.signingPin,
          joinEncryptionKeyPin: installed.encryptionPin,
        },
        log: (line) => agent.lines.push(line),
      }),
    /** A gateway that serves `serving`'s chain and signs its welcomes with the installed key. */
    async gateway(serving: TrustGeneration = installed) {
      const g = new FakeGateway(installed);
      await g.start(serving);
      gateways.push(g);
      return g;
    },
    /** Waits up to 10 s for `condition`; the error names `what` and the log. */
    async until(condition: () => boolean, what: string) {
      for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
      if (!condition()) throw new Error(`timed out waiting for ${what}; log: ${agent.lines.join(' | ')}`);
    },
    /** The session loop with `trust` through `g`, opening its session at once and renewing after an hour unless told. */
    startLoop(g: FakeGateway, trust: TrustStore, options: Partial<Omit<LoopOptions, 'signal' | 'log' | 'onSession'>> = {}) {
      return runAgentLoop(
        {
          identityDir: agent.dir,
          gatewayUrl: g.url,
          servingCaPin: installed.servingCaPin,
          gatewayServerName: '127.0.0.1',
          trust,
          agentVersion: 'test',
          startJitterMs: 0,
          renewalDelay: () => 3_600_000,
          ...options,
        },
        agent.lines,
      );
    },
  };
  beforeEach(async () => {
    agent.dir = await mkdtemp(path.join(tmpdir(), prefix));
    agent.lines.length = 0;
  });
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
    await rm(agent.dir, { recursive: true, force: true });
  });
  return agent;
}
