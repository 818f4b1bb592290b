import type { z } from 'zod';
import { AgentError } from '../agent/errors';

/** How many of a malformed answer's problems the error names; the rest are counted. */
const SHOWN_ISSUES = 3;

/**
 * A server answer that does not have the shape its procedure's output schema declares (a server of another
 * version, a proxy answering in its place). The CLI's error handler prints the message and exits 1.
 */
export class MalformedAnswerError extends AgentError {
  constructor(
    readonly command: string,
    readonly procedure: string,
    readonly fields: string[],
    message: string,
  ) {
    super('PROTOCOL', message);
    this.name = 'MalformedAnswerError';
  }
}

/** `items[0].expiresAt`, or `the answer` for the answer itself. */
function fieldOf(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `${out ? '.' : ''}${String(key)}`;
  return out || 'the answer';
}

/**
 * Parses an answer with its output schema, or throws a MalformedAnswerError naming the command, the
 * procedure and each wrong field with what was expected there. The message is built from the field's path
 * and zod's issue text, which names types, formats and the schema's own values, never a value of the
 * answer: an answer carrying a secret in an unexpected place does not print it.
 */
export function parseAnswer(command: string, procedure: string, schema: z.ZodType, answer: unknown): unknown {
  const result = schema.safeParse(answer);
  if (result.success) return result.data;
  const issues = result.error.issues;
  const fields = issues.map((issue) => fieldOf(issue.path));
  const shown = issues.slice(0, SHOWN_ISSUES).map((issue, i) => `${fields[i]}: ${issue.message}`);
  const more = issues.length > SHOWN_ISSUES ? `; and ${issues.length - SHOWN_ISSUES} more` : '';
  throw new MalformedAnswerError(
    command,
    procedure,
    fields,
    `${command}: the server's answer to ${procedure} does not have the shape this CLI expects (${shown.join('; ')}${more}); ` +
      'is the server another version of Better Compute?',
  );
}
