/**
 * The Commands wire contract (protocol.md "Commands"): the signed command body, the result an agent posts on
 * its session's connection, the kinds of protocol 1 and the allowed-kinds rule. Pure: no database and no
 * keys, so the server, the gateway and the agent import it alike.
 */

/** Kinds in protocol 1. */
export const COMMAND_KINDS = ['bcd.doctor', 'bcd.renew', 'trust.refresh'] as const;
export type CommandKind = (typeof COMMAND_KINDS)[number];

/** The largest result `output` (its JSON bytes). */
export const MAX_COMMAND_OUTPUT_BYTES = 64 * 1024;
/** The largest result body read: the output and the status around it. */
export const MAX_COMMAND_RESULT_BODY_BYTES = MAX_COMMAND_OUTPUT_BYTES + 1024;

/** A command id: `cmd_` and 24 hex digits (server/ids.ts's shape). */
export const COMMAND_ID = /^cmd_[A-Za-z0-9]{8,64}$/;

/** `POST /v1/commands/{commandId}/result`, under the base path; `commandId` is checked with {@link COMMAND_ID}. */
export const commandResultPath = (commandId: string) => `/v1/commands/${commandId}/result`;
/** The route's pattern, for the gateway and the API. */
export const COMMAND_RESULT_ROUTE = /^\/v1\/commands\/(cmd_[A-Za-z0-9]{8,64})\/result$/;

/** The body of a `command` event's signed envelope. */
export interface CommandBody {
  status: 'command';
  commandId: string;
  nodeId: string;
  kind: string;
  args: Record<string, unknown>;
  /** Unix seconds: the agent runs nothing after it. */
  notAfter: number;
}

const COMMAND_RESULT_STATUSES = ['succeeded', 'failed', 'rejected'] as const;
type CommandResultStatus = (typeof COMMAND_RESULT_STATUSES)[number];

/** What an agent posts to {@link commandResultPath}. */
export interface CommandResult {
  status: CommandResultStatus;
  output: Record<string, unknown>;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
/** Every refused result is these bytes, whatever the reason. */
export const RESULT_REFUSED = { status: 403, body: json({ code: 'ACCESS_DENIED', message: 'Result refused' }) } as const;

/**
 * Whether `kind` is allowed by a certificate's `allowedKinds`; null means unrestricted (the certificate's
 * attestor set none), an empty list allows nothing.
 */
export function kindAllowed(kind: string, allowedKinds: readonly string[] | null): boolean {
  if (allowedKinds === null) return true;
  return allowedKinds.some((allowed) => (allowed.endsWith('.*') ? kind.startsWith(allowed.slice(0, -1)) : allowed === kind));
}

/**
 * Parses a result body (bytes already bounded by {@link MAX_COMMAND_RESULT_BODY_BYTES}); null when it is not
 * exactly `{ status, output }` with a known status and an object output of at most
 * {@link MAX_COMMAND_OUTPUT_BYTES} bytes.
 */
export function parseCommandResult(bytes: Buffer): CommandResult | null {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { status, output, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return null;
  if (!COMMAND_RESULT_STATUSES.includes(status as CommandResultStatus)) return null;
  if (typeof output !== 'object' || output === null || Array.isArray(output)) return null;
  if (Buffer.byteLength(JSON.stringify(output)) > MAX_COMMAND_OUTPUT_BYTES) return null;
  return { status: status as CommandResultStatus, output: output as Record<string, unknown> };
}

/**
 * Parses a verified command body; null when a field is missing or of another type (the agent then answers
 * `rejected`).
 */
export function parseCommandBody(value: unknown): CommandBody | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  if (v.status !== 'command') return null;
  if (typeof v.commandId !== 'string' || !COMMAND_ID.test(v.commandId)) return null;
  if (typeof v.nodeId !== 'string' || typeof v.kind !== 'string') return null;
  if (typeof v.args !== 'object' || v.args === null || Array.isArray(v.args)) return null;
  if (typeof v.notAfter !== 'number' || !Number.isSafeInteger(v.notAfter)) return null;
  return {
    status: 'command',
    commandId: v.commandId,
    nodeId: v.nodeId,
    kind: v.kind,
    args: v.args as Record<string, unknown>,
    notAfter: v.notAfter,
  };
}
