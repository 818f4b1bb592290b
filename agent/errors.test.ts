import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { AGENT_ERROR_CODES, AGENT_EXIT, AgentError, agentExitCode, errorLine, EXIT_FAILURE, type AgentErrorCode } from './errors';
import { GatewayTrustError } from './renew/gateway-client';
import { IdentityLoadError } from './renew/identity';
import { RenewRefusedError } from './renew/renew';
import { TpmError } from './tpm/client';
import { TpmRenewalError } from './tpm/renewal';
import { TpmJoinError } from './tpm/tpm-join';
import { TpmJoinRefused } from './tpm/tpm-join-flow';
import { JoinAnswerError } from './verify-answer';
import { TokenInputError } from './bcd/token-input';
import { ConfigError } from './bcd/config-toml';
import { UsageError } from './bcd/join-setup';
import { SessionRefusedError } from './session/session-client';
import { HelperRefusal } from './helper/tpm-ops';
import { FrameError } from './helper/wire';
import { TlsAlertError, TlsPeerAlertError } from './tls13/alerts';
import { JoinRefusedError } from './join-refused';

describe('the agent error table', () => {
  it('maps every code to its exit code: 2 for usage and configuration, 1 for every other failure', () => {
    const expected: Record<AgentErrorCode, number> = {
      USAGE: 2,
      CONFIG: 2,
      REFUSED: 1,
      TRUST: 1,
      TPM: 1,
      PROTOCOL: 1,
      UNAVAILABLE: 1,
      IDENTITY: 1,
    };
    expect(AGENT_EXIT).toEqual(expected);
    for (const code of AGENT_ERROR_CODES) expect(agentExitCode(new AgentError(code, 'x')), code).toBe(expected[code]);
  });

  it('gives each agent error its code, keeps its class, name and message', () => {
    const cases: Array<[AgentError, string, AgentErrorCode, string]> = [
      [new UsageError('--attestor is one of'), 'UsageError', 'USAGE', '--attestor is one of'],
      [new TokenInputError('No join token on standard input'), 'TokenInputError', 'USAGE', 'No join token on standard input'],
      [new ConfigError('config.toml:3: unknown key'), 'ConfigError', 'CONFIG', 'config.toml:3: unknown key'],
      [new JoinRefusedError(403, 'ACCESS_DENIED', 'Join refused'), 'JoinRefusedError', 'REFUSED', 'Join refused'],
      [new TpmJoinRefused('ACCESS_DENIED', 'Join refused', 'ab'), 'TpmJoinRefused', 'REFUSED', 'Join refused'],
      [new TpmJoinError('round one answered 403', 403), 'TpmJoinError', 'REFUSED', 'round one answered 403'],
      [new RenewRefusedError(), 'RenewRefusedError', 'REFUSED', 'Renew refused'],
      [new SessionRefusedError(), 'SessionRefusedError', 'REFUSED', 'Session refused'],
      [new HelperRefusal('the key is not a bcd node key'), 'HelperRefusal', 'REFUSED', 'the key is not a bcd node key'],
      [new GatewayTrustError('off the pin'), 'GatewayTrustError', 'TRUST', 'off the pin'],
      [new JoinAnswerError('san', 'wrong SAN'), 'JoinAnswerError', 'TRUST', 'wrong SAN'],
      [new TpmError('Quote', 0x98e), 'TpmError', 'TPM', 'TPM2_Quote failed: TPM_RC 0x98e'],
      [new TpmRenewalError('not the TPM'), 'TpmRenewalError', 'TPM', 'not the TPM'],
      [new FrameError('bytes after the frame'), 'FrameError', 'PROTOCOL', 'bytes after the frame'],
      [new TlsAlertError(80, 'bad'), 'TlsAlertError', 'PROTOCOL', 'TLS: bad'],
      [new TlsPeerAlertError(51), 'TlsPeerAlertError', 'PROTOCOL', 'TLS: the server sent alert 51 (decrypt_error)'],
      [new IdentityLoadError('no identity'), 'IdentityLoadError', 'IDENTITY', 'no identity'],
    ];
    for (const [error, name, code, message] of cases) {
      expect(error).toBeInstanceOf(AgentError);
      expect(error).toBeInstanceOf(Error);
      expect([error.name, error.code, error.message]).toEqual([name, code, message]);
      expect(agentExitCode(error)).toBe(AGENT_EXIT[code]);
    }
    // The server's own code of a refusal stays apart from the agent's.
    expect(new JoinRefusedError(409, 'CONFLICT', 'raced').serverCode).toBe('CONFLICT');
  });

  it('takes parseArgs refusals as usage errors', () => {
    let thrown: unknown;
    try {
      parseArgs({ args: ['--nope'], strict: true, options: {} });
    } catch (error) {
      thrown = error;
    }
    expect(agentExitCode(thrown)).toBe(2);
  });

  it('ends an unknown error with the generic code and one line, never a stack trace', () => {
    const unknown = new Error('connect ECONNREFUSED 127.0.0.1:8443');
    expect(agentExitCode(unknown)).toBe(EXIT_FAILURE);
    expect(EXIT_FAILURE).toBe(1);
    expect(errorLine(unknown)).toBe('connect ECONNREFUSED 127.0.0.1:8443');
    expect(errorLine(new UsageError('bad'))).not.toContain('\n');
    for (const thrown of ['a string', undefined, null, { code: 'ENOENT' }, 42]) {
      expect(agentExitCode(thrown)).toBe(1);
      expect(errorLine(thrown)).not.toMatch(/\n\s+at /);
    }
    expect(errorLine('a string')).toBe('a string');
  });
});
