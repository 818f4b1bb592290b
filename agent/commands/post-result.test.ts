import { describe, expect, it } from 'vitest';
import { MAX_COMMAND_OUTPUT_BYTES, RESULT_REFUSED } from '../../protocol/command-wire';
import { capOutput } from './output';
import { postCommandResult } from './post-result';

const ID = 'cmd_0123456789abcdef01234567';

describe('postCommandResult', () => {
  it('retries a network failure and a 5xx with backoff, on the session the loop holds then', async () => {
    const calls: string[] = [];
    const waits: number[] = [];
    const lines: string[] = [];
    const first = async () => {
      calls.push('first');
      throw new Error('the gateway did not answer');
    };
    let n = 0;
    const later = async (pathname: string, body: string) => {
      calls.push(`later ${pathname} ${body}`);
      return { status: ++n === 1 ? 503 : 204, body: Buffer.alloc(0) };
    };
    const sent = await postCommandResult(
      first,
      () => later,
      ID,
      { status: 'succeeded', output: {} },
      {
        basePath: '/api/compute',
        log: (line) => lines.push(line),
        retryDelayMs: (attempt) => (waits.push(attempt), 1),
      },
    );
    expect(sent).toBe(true);
    expect(calls).toEqual([
      'first',
      `later /api/compute/v1/commands/${ID}/result {"status":"succeeded","output":{}}`,
      `later /api/compute/v1/commands/${ID}/result {"status":"succeeded","output":{}}`,
    ]);
    expect(waits).toEqual([1, 2]);
    expect(lines).toEqual([]);
  });

  it('logs the uniform 403 and does not retry it; gives up after the attempts on network failures', async () => {
    const lines: string[] = [];
    let calls = 0;
    const refused = async () => (calls++, { status: RESULT_REFUSED.status, body: RESULT_REFUSED.body });
    const options = { basePath: '/api/compute', log: (line: string) => lines.push(line), retryDelayMs: () => 1 };
    expect(await postCommandResult(refused, () => refused, ID, { status: 'rejected', output: {} }, options)).toBe(false);
    expect(calls).toBe(1);
    expect(lines[0]).toMatch(/refused the rejected result of command cmd_0123456789abcdef01234567 \(403: not sent to this certificate/);
    const down = async () => (calls++, Promise.reject(new Error('ECONNRESET')));
    expect(await postCommandResult(down, () => down, ID, { status: 'failed', output: {} }, { ...options, attempts: 3 })).toBe(false);
    expect(calls).toBe(4);
    expect(lines[1]).toBe(`agent: could not post the result of command ${ID} after 3 attempts: ECONNRESET`);
  });
});

describe('capOutput', () => {
  it('keeps an output that fits and never exceeds the cap, whatever it escapes or splits', () => {
    expect(capOutput({ a: 1 })).toEqual({ a: 1 });
    for (const filler of ['x', '"\\', '😀', 'é\n\u0001']) {
      for (const max of [64, 100, 1001, MAX_COMMAND_OUTPUT_BYTES]) {
        const output = { detail: filler.repeat(max) };
        const capped = capOutput(output, max);
        const text = JSON.stringify(capped);
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(max);
        expect(capped.truncated).toBe(true);
        expect(JSON.stringify(output).startsWith(capped.partial as string)).toBe(true);
        // No lone half of a surrogate pair (its JSON would carry a \ud83d escape).
        expect(text).not.toMatch(/\\ud[89ab]/);
      }
    }
  });
});
