import { COMMAND_KINDS, type CommandBody, type CommandKind, type CommandResult } from '../../protocol/command-wire';
import { capOutput } from './output';
import { postCommandResult, type PostOnSession, type PostResultOptions } from './post-result';
import type { ReplayStore } from './replay-store';
import { checkCommandEnvelope, type RejectReason } from './verify-command';

/** Runs one kind: resolves with its output, rejects when it failed; `signal` aborts when its time is up. */
export type CommandHandler = (body: CommandBody, signal: AbortSignal) => Promise<Record<string, unknown>>;

/** Commands waiting to run beyond the one running; more are answered `rejected` (`busy`). */
export const MAX_PENDING_COMMANDS = 16;
/** Answers waiting to be posted (rejections); beyond this an answer is logged and dropped. */
const MAX_PENDING_ANSWERS = 64;
/** The longest a command runs before it is answered `failed`. */
const COMMAND_TIMEOUT_MS = 120_000;

/** The session an event came on, as far as answering goes. */
interface OnSession {
  post: PostOnSession;
}

/** Test seams of the runner: the clock, a command's time limit, the result's retries. */
export interface CommandRunnerSeams {
  now?: () => number;
  timeoutMs?: number;
  post?: Pick<PostResultOptions, 'attempts' | 'retryDelayMs'>;
}

interface CommandRunnerOptions extends CommandRunnerSeams {
  /** This node's id (the identity's; a renewal keeps it). */
  nodeId: () => string;
  /** The commandTrustBundle of the trust set held now (a trust event may change it). */
  commandTrustBundle: () => readonly string[];
  replay: ReplayStore;
  handlers: Record<CommandKind, CommandHandler>;
  basePath: string;
  log: (line: string) => void;
  /** The session the loop holds now: retries of a post go there. */
  latestSession?: () => OnSession | null;
}

interface Job {
  body: CommandBody;
  on: OnSession;
  /** The id's record on disk. */
  taken: Promise<void>;
}

/**
 * The agent's side of protocol.md "Commands": checks every `command` event (signature under the
 * commandTrustBundle, node, `notAfter`, an id never taken before, durably), runs what it accepts one at a time
 * in arrival order (at most {@link MAX_PENDING_COMMANDS} waiting), and answers each on the session's
 * connection. An envelope whose signature does not verify is logged and never answered.
 */
export class CommandRunner {
  readonly #options: CommandRunnerOptions;
  readonly #jobs: Job[] = [];
  /** The queue being worked through, and the job of it in progress. */
  #draining: Promise<void> | null = null;
  #current: Promise<void> | null = null;
  #answers: Promise<void> = Promise.resolve();
  #pendingAnswers = 0;

  constructor(options: CommandRunnerOptions) {
    this.#options = options;
  }

  #nowSeconds(): number {
    return Math.floor((this.#options.now ?? Date.now)() / 1000);
  }

  /** A `command` event's data, with the session it came on. Never throws; the work happens later. */
  onEvent(envelope: unknown, on: OnSession): void {
    const { log, replay } = this.#options;
    const now = this.#nowSeconds();
    const verdict = checkCommandEnvelope(envelope, this.#options.commandTrustBundle(), this.#options.nodeId(), now);
    if ('ignore' in verdict) return log(`agent: ignored a command event: ${verdict.ignore}`);
    if ('reject' in verdict) return this.#reject(verdict.reject, verdict.reason, on);
    const body = verdict.run;
    // Without its record of the ids it ran, the agent cannot tell a replay: it runs nothing until the file is fixed.
    if (replay.unusable() !== null) return this.#reject(body.commandId, 'replay-store-unusable', on);
    if (replay.has(body.commandId)) return this.#reject(body.commandId, 'replayed', on);
    // No room to remember it: not run (forgetting an id that could still be replayed is not an option).
    if (!replay.hasRoom(now)) return this.#reject(body.commandId, 'busy', on);
    if (this.#jobs.length >= MAX_PENDING_COMMANDS) {
      // Taken as answered: a replay of it later is not run either.
      void replay.take(body.commandId, body.notAfter).catch(() => {});
      return this.#reject(body.commandId, 'busy', on);
    }
    const taken = replay.take(body.commandId, body.notAfter);
    if (!(COMMAND_KINDS as readonly string[]).includes(body.kind)) {
      void taken.catch(() => {});
      return this.#reject(body.commandId, 'unknown-kind', on);
    }
    // Stored before it runs: a restart in the middle never runs it a second time.
    this.#jobs.push({ body, on, taken });
    this.#draining ??= this.#drain();
  }

  /** Settles when the command in progress (run and answered) is done; at once when none is. */
  running(): Promise<void> {
    return this.#current ?? Promise.resolve();
  }

  /** Settles when nothing is queued or running and every answer was posted (or given up). */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
    for (let answers = this.#answers; ; answers = this.#answers) {
      await answers;
      if (answers === this.#answers) return;
    }
  }

  async #drain(): Promise<void> {
    for (let job = this.#jobs.shift(); job; job = this.#jobs.shift()) {
      this.#current = this.#runOne(job);
      await this.#current;
    }
    this.#current = null;
    this.#draining = null;
  }

  async #runOne(job: Job): Promise<void> {
    const { body, on } = job;
    const { log } = this.#options;
    try {
      await job.taken;
    } catch (error) {
      return void (await this.#answer(on, body.commandId, {
        status: 'failed',
        output: { error: `could not record the command id durably: ${(error as Error).message}` },
      }));
    }
    // It may have waited in the queue past its time.
    if (this.#nowSeconds() > body.notAfter) return void (await this.#answer(on, body.commandId, rejected('expired')));
    log(`agent: running command ${body.commandId} (${body.kind})`);
    const controller = new AbortController();
    const timeoutMs = this.#options.timeoutMs ?? COMMAND_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new Error(`it did not finish within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}`));
      }, timeoutMs);
    });
    let result: CommandResult;
    try {
      const handler = this.#options.handlers[body.kind as CommandKind];
      const output = await Promise.race([handler(body, controller.signal), timedOut]);
      result = { status: 'succeeded', output: capOutput(output) };
    } catch (error) {
      result = { status: 'failed', output: capOutput({ error: (error as Error).message }) };
    } finally {
      clearTimeout(timer);
    }
    log(`agent: command ${body.commandId} (${body.kind}) ${result.status}`);
    await this.#answer(on, body.commandId, result);
  }

  #reject(commandId: string, reason: RejectReason, on: OnSession): void {
    this.#options.log(`agent: rejected command ${commandId}: ${reason}`);
    if (this.#pendingAnswers >= MAX_PENDING_ANSWERS) {
      this.#options.log(`agent: too many answers waiting; the rejection of ${commandId} is not sent`);
      return;
    }
    this.#pendingAnswers += 1;
    this.#answers = this.#answers.then(async () => {
      await this.#answer(on, commandId, rejected(reason));
      this.#pendingAnswers -= 1;
    });
  }

  async #answer(on: OnSession, commandId: string, result: CommandResult): Promise<void> {
    const { latestSession, basePath, log, post } = this.#options;
    const next = () => {
      const latest = latestSession?.() ?? on;
      return (pathname: string, text: string) => latest.post(pathname, text);
    };
    await postCommandResult((pathname, text) => on.post(pathname, text), next, commandId, result, { basePath, log, ...post });
  }
}

const rejected = (reason: RejectReason): CommandResult => ({ status: 'rejected', output: { reason } });
