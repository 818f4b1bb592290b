import { afterEach, describe, expect, it, vi } from 'vitest';
import { DomainError } from '../protocol/errors';
import { AGENT_ERROR_CODES, AGENT_EXIT, AgentError } from '../agent/errors';
import { JoinRefusedError } from '../agent/join-refused';
import { MalformedAnswerError } from './answer';
import { printError } from './errors';

function printed(error: unknown): { code: number; stderr: string } {
  let stderr = '';
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    return { code: printError(error), stderr };
  } finally {
    write.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

describe('the CLI error handler', () => {
  it('ends an agent error with the agent table’s exit code and its message', () => {
    for (const code of AGENT_ERROR_CODES) expect(printed(new AgentError(code, 'x')).code, code).toBe(AGENT_EXIT[code]);
    expect(printed(new JoinRefusedError(403, 'ACCESS_DENIED', 'Join refused'))).toEqual({ code: 1, stderr: 'error: Join refused\n' });
    expect(printed(new MalformedAnswerError('nodes list', 'nodes.list', ['items'], 'bad answer'))).toEqual({
      code: 1,
      stderr: 'error: bad answer\n',
    });
  });

  it('keeps the server’s table for domain errors and 1 for anything else, without a stack trace', () => {
    expect(printed(new DomainError('NOT_FOUND', 'Pool p not found'))).toEqual({ code: 3, stderr: 'error (NOT_FOUND): Pool p not found\n' });
    expect(printed(new Error('fetch failed'))).toEqual({ code: 1, stderr: 'error: fetch failed\n' });
    expect(printed('down')).toEqual({ code: 1, stderr: 'error: down\n' });
  });
});
