import { commandResultPath, type CommandResult } from '../../protocol/command-wire';

/** Where a result is posted: a session's connection (AgentSession.post). */
export type PostOnSession = (pathname: string, body: string) => Promise<{ status: number; body: Buffer }>;

export interface PostResultOptions {
  basePath: string;
  log: (line: string) => void;
  /** Attempts in all, for network failures and 5xx answers (4 unless given). */
  attempts?: number;
  /** The wait before retry `n` (1, 2, 4 s unless given). */
  retryDelayMs?: (n: number) => number;
}

/**
 * Posts a command's result (protocol.md "Commands": `POST {basePath}/v1/commands/{commandId}/result`) on the
 * session's connection; `next()` names the connection of each retry (the session the loop holds then, which
 * after a renewal or a refresh is a new one). A 2xx is done; the uniform 403 (a result the server does not
 * take: not sent to this certificate, or answered already) and any other 4xx are logged and not retried; a
 * network failure or a 5xx is retried a few times with backoff, then logged. Never throws.
 *
 * @returns whether the server took the result.
 */
export async function postCommandResult(
  first: PostOnSession,
  next: () => PostOnSession,
  commandId: string,
  result: CommandResult,
  options: PostResultOptions,
): Promise<boolean> {
  const attempts = options.attempts ?? 4;
  const delay = options.retryDelayMs ?? ((n: number) => 1000 * 2 ** (n - 1));
  const body = JSON.stringify(result);
  let problem = '';
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, delay(attempt)));
    const post = attempt === 0 ? first : next();
    try {
      const answer = await post(`${options.basePath}${commandResultPath(commandId)}`, body);
      if (answer.status >= 200 && answer.status < 300) return true;
      if (answer.status < 500) {
        options.log(
          `agent: the control plane refused the ${result.status} result of command ${commandId} (${answer.status}${answer.status === 403 ? ': not sent to this certificate, or answered already' : ''}); not retried`,
        );
        return false;
      }
      problem = `answered ${answer.status}`;
    } catch (error) {
      problem = (error as Error).message;
    }
  }
  options.log(`agent: could not post the result of command ${commandId} after ${attempts} attempts: ${problem}`);
  return false;
}
