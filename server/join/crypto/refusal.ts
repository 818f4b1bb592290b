/**
 * A join refusal. JoinService records `reason` (for example `join:csr`, `join:token`) in the
 * `security.join.refused` event and answers every refusal with the same `403 ACCESS_DENIED "Join refused"`,
 * so nothing here ever reaches the agent. `detail` says which rule failed, for server logs and tests only.
 */
export class JoinRefusal extends Error {
  readonly reason: string;
  readonly detail: string;

  constructor(reason: string, detail: string, options: { cause?: unknown } = {}) {
    super('Join refused', options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'JoinRefusal';
    this.reason = reason;
    this.detail = detail;
  }
}
