import { describe, expect, it } from 'vitest';
import { captureStderr } from '../test/fixtures';
import { logLimited, redact } from './log';
import { isClientAbort } from './http/client-abort';

describe('logLimited', () => {
  it('writes one short line per key and minute, then names how many it suppressed', () => {
    const capture = captureStderr();
    try {
      const t0 = 1_000_000;
      for (let i = 0; i < 500; i++) logLimited('test-key', 'invalid session cookie ignored', t0 + i);
      logLimited('test-key', 'invalid session cookie ignored', t0 + 60_001);
      const lines = capture.lines.filter((l) => l.includes('invalid session cookie ignored'));
      expect(lines).toHaveLength(2);
      expect(JSON.parse(lines[1]!)).toMatchObject({ level: 'warn', suppressed: 499 });
      for (const line of lines) expect(line.length).toBeLessThan(200);
    } finally {
      capture.stop();
    }
  });

  it('tells a client abort from a server failure', () => {
    expect(isClientAbort(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isClientAbort(new DOMException('The operation was aborted', 'AbortError'))).toBe(true);
    expect(isClientAbort(new Error('relation "operators" does not exist'))).toBe(false);
  });
});

describe('redact', () => {
  it('strips join tokens, API keys and invitation tokens as a last line of defence', () => {
    const invitation = `bcinv_inv_${'a'.repeat(26)}.${'B'.repeat(43)}`;
    expect(redact(`mail for ${invitation} failed; key bcak_abc.def`)).toBe('mail for [redacted] failed; key [redacted]');
  });
});
