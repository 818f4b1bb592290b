import { AgentError } from './errors';

/** The server did not admit the join: `status` and `serverCode` are its answer's (403 ACCESS_DENIED, 409, 503). */
export class JoinRefusedError extends AgentError {
  constructor(
    readonly status: number,
    readonly serverCode: string,
    message: string,
  ) {
    super('REFUSED', message);
    this.name = 'JoinRefusedError';
  }

  /** The refusal a non-200 answer's body states (`{ code, message }`), or its status when the body is not JSON. */
  static of(status: number, text: string): JoinRefusedError {
    let error: { code?: string; message?: string } = {};
    try {
      error = JSON.parse(text);
    } catch {
      // not JSON: reported by status below
    }
    return new JoinRefusedError(status, error.code ?? 'UNKNOWN', error.message ?? `The server answered ${status}`);
  }
}
