import { COMMAND_KINDS, type CommandKind } from '../../protocol/command-wire';
import type { PostOnSession } from './post-result';
import { ReplayStore } from './replay-store';
import { CommandRunner, type CommandRunnerSeams } from './runner';
import { SessionActions } from './session-actions';

/** What an agent that runs commands gives its session loop (`bcd node`, `better-compute agent run`). */
export interface SessionCommandOptions extends CommandRunnerSeams {
  /** `bcd.doctor`: the doctor's structured result (`bcd doctor --json`, or `agent doctor`'s checks). */
  doctor(): Promise<Record<string, unknown>>;
  /** Where command-replay.json lives: the identity directory unless given; null keeps it in memory. */
  replayDir?: string | null;
}

/** What the loop knows that the runner needs. */
interface LoopContext {
  identityDir: string;
  basePath: string;
  log: (line: string) => void;
  nodeId: () => string;
  commandTrustBundle: () => readonly string[];
  /** The session the loop holds now. */
  latestSession: () => { post: PostOnSession } | null;
}

/** The kinds Hello reports for an agent that runs commands: every kind of protocol 1. */
const AGENT_COMMAND_KINDS: readonly CommandKind[] = COMMAND_KINDS;

/**
 * Sets up commands for a session loop: the replay store (beside the identity), the runner, and the hand-over
 * through which `bcd.renew` and `trust.refresh` ask the loop. The loop sends `kinds` in Hello, passes every
 * `command` event to `onEvent` with its session, and takes `actions` where it waits for its next renewal.
 */
export async function startSessionCommands(options: SessionCommandOptions, loop: LoopContext) {
  const replay = await ReplayStore.open(options.replayDir === undefined ? loop.identityDir : options.replayDir, loop.log);
  // The runner's job in progress is what a taken action waits for before the loop closes its session.
  const actions = new SessionActions(() => runner.running());
  const runner: CommandRunner = new CommandRunner({
    nodeId: loop.nodeId,
    commandTrustBundle: loop.commandTrustBundle,
    replay,
    basePath: loop.basePath,
    log: loop.log,
    latestSession: loop.latestSession,
    now: options.now,
    timeoutMs: options.timeoutMs,
    post: options.post,
    handlers: {
      'bcd.doctor': () => options.doctor(),
      'bcd.renew': (_body, signal) => actions.request('renew', signal),
      'trust.refresh': (_body, signal) => actions.request('refresh', signal),
    },
  });
  return { kinds: AGENT_COMMAND_KINDS, onEvent: (data: unknown, on: { post: PostOnSession }) => runner.onEvent(data, on), actions, runner };
}
