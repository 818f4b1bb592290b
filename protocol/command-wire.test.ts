import { describe, expect, it } from 'vitest';
import { kindAllowed, MAX_COMMAND_OUTPUT_BYTES, parseCommandBody, parseCommandResult } from './command-wire';

const bytes = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('command wire', () => {
  it('allows exact kinds and prefixes, everything when unrestricted and nothing for an empty list', () => {
    expect(kindAllowed('bcd.doctor', null)).toBe(true);
    expect(kindAllowed('bcd.doctor', [])).toBe(false);
    expect(kindAllowed('bcd.doctor', ['bcd.doctor'])).toBe(true);
    expect(kindAllowed('bcd.renew', ['bcd.doctor'])).toBe(false);
    expect(kindAllowed('bcd.renew', ['bcd.*'])).toBe(true);
    expect(kindAllowed('bcd', ['bcd.*'])).toBe(false);
    expect(kindAllowed('bcdx.renew', ['bcd.*'])).toBe(false);
    expect(kindAllowed('trust.refresh', ['bcd.*', 'trust.refresh'])).toBe(true);
  });

  it('parses a result of a known status with an object output, and nothing else', () => {
    expect(parseCommandResult(bytes({ status: 'succeeded', output: { serial: '01' } }))).toEqual({
      status: 'succeeded',
      output: { serial: '01' },
    });
    expect(parseCommandResult(bytes({ status: 'done', output: {} }))).toBeNull();
    expect(parseCommandResult(bytes({ status: 'failed', output: [] }))).toBeNull();
    expect(parseCommandResult(bytes({ status: 'failed' }))).toBeNull();
    expect(parseCommandResult(bytes({ status: 'failed', output: {}, extra: 1 }))).toBeNull();
    expect(parseCommandResult(Buffer.from([0xff, 0xfe]))).toBeNull();
    const big = { text: 'x'.repeat(MAX_COMMAND_OUTPUT_BYTES) };
    expect(parseCommandResult(bytes({ status: 'succeeded', output: big }))).toBeNull();
  });

  it('parses a command body and refuses one with a missing or mistyped field', () => {
    const body = {
      status: 'command',
      commandId: 'cmd_01k5w0000000000000000000',
      nodeId: 'node_1',
      kind: 'bcd.renew',
      args: {},
      notAfter: 1765100000,
    };
    expect(parseCommandBody(body)).toEqual(body);
    expect(parseCommandBody({ ...body, status: 'welcome' })).toBeNull();
    expect(parseCommandBody({ ...body, commandId: 'x' })).toBeNull();
    expect(parseCommandBody({ ...body, args: [] })).toBeNull();
    expect(parseCommandBody({ ...body, notAfter: '1' })).toBeNull();
    expect(parseCommandBody(null)).toBeNull();
  });
});
