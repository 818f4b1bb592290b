/**
 * The agent's errors: one base class with a closed code, like the server's DomainError (protocol/errors.ts),
 * and one table that maps each code to the exit code `bcd` and `better-compute agent` end with. Each error keeps
 * its own class (tests and callers tell them apart with `instanceof`); the code says what kind of failure it is.
 */
export const AGENT_ERROR_CODES = [
  /** The command line is wrong: an unknown or conflicting option, a token that is not one. */
  'USAGE',
  /** config.toml (or another file the install wrote) is wrong. */
  'CONFIG',
  /** The control plane, the gateway or the helper refused: a uniform refusal never says why. */
  'REFUSED',
  /** What the other side presented is not trusted: a chain off the pin, an answer that fails its checks. */
  'TRUST',
  /** The TPM failed a command or cannot make what the protocol needs. */
  'TPM',
  /** Bytes that break the wire: a TLS alert, a frame over its limit, an answer of the wrong shape. */
  'PROTOCOL',
  /** The other side cannot answer now (a restart, a helper that is not running): retry later. */
  'UNAVAILABLE',
  /** The stored identity does not load. */
  'IDENTITY',
] as const;

export type AgentErrorCode = (typeof AGENT_ERROR_CODES)[number];

export class AgentError extends Error {
  readonly code: AgentErrorCode;

  constructor(code: AgentErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentError';
    this.code = code;
  }
}

/**
 * The class of an error that is only its message: `class ConfigError extends agentErrorClass('CONFIG',
 * 'ConfigError') {}`. The name is given, not taken from the class, so the bundled bcd reports the same one.
 */
export function agentErrorClass(code: AgentErrorCode, name: string) {
  return class extends AgentError {
    constructor(message: string, options?: { cause?: unknown }) {
      super(code, message, options);
      this.name = name;
    }
  };
}

/** Exit code for an error the table does not know (a bug, a network failure): one line, never a stack trace. */
export const EXIT_FAILURE = 1;

/**
 * The one table: the exit code of each code, for `bcd` (agent/bcd/main.ts) and `better-compute agent`
 * (cli/errors.ts). A wrong command line or configuration exits 2; every other failure 1. The outcomes that are
 * not errors (0 joined, 3 waiting for approval, the renewal loop's RENEWAL_EXIT) stay with their commands.
 */
export const AGENT_EXIT: Readonly<Record<AgentErrorCode, number>> = {
  USAGE: 2,
  CONFIG: 2,
  REFUSED: EXIT_FAILURE,
  TRUST: EXIT_FAILURE,
  TPM: EXIT_FAILURE,
  PROTOCOL: EXIT_FAILURE,
  UNAVAILABLE: EXIT_FAILURE,
  IDENTITY: EXIT_FAILURE,
};

/** node:util parseArgs refuses an unknown or malformed option with one of these codes: a usage error. */
const isParseArgsError = (error: unknown) => String((error as { code?: unknown } | null)?.code ?? '').startsWith('ERR_PARSE_ARGS');

/** The exit code an error ends a command with: the table's for an AgentError, usage for parseArgs, else 1. */
export function agentExitCode(error: unknown): number {
  if (error instanceof AgentError) return AGENT_EXIT[error.code];
  if (isParseArgsError(error)) return AGENT_EXIT.USAGE;
  return EXIT_FAILURE;
}

/** The one line an error is reported with: its message (or what was thrown), never its stack. */
export function errorLine(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
