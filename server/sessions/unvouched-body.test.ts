import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_ACCEPTANCE_PATH, SESSION_LEASE_PATH, SESSION_REFUSED, SESSION_WATCH_PATH } from '../../protocol/session-wire';
import { voucherFromServingChain } from '../gateway/gateway';
import { VOUCH_HEADER, vouchHeaders } from '../vouching/vouch';
import { BASE, createRenewHarness, type RenewHarness } from '../../test/renew-harness';

const DECLARED = 8 * 1024 * 1024;
let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});

/**
 * Declares an 8 MiB body, sends 1 KiB of it and stops: resolves with what the API answered (the socket's bytes
 * until it closes) and how much of the body had been sent.
 */
function partialPost(path: string, headers: Record<string, string> = {}) {
  const url = new URL(r.apiUrl);
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      const extra = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      socket.write(`POST ${path} HTTP/1.1\r\nhost: api\r\ncontent-type: application/json\r\ncontent-length: ${DECLARED}\r\n${extra}\r\n`);
      socket.write(Buffer.alloc(1024, 0x20));
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
    socket.on('error', reject);
  });
}

describe('gateway-only session paths on the API port', () => {
  it.each([SESSION_LEASE_PATH, SESSION_ACCEPTANCE_PATH, SESSION_WATCH_PATH])(
    '%s refuses an unvouched 8 MiB body with the uniform bytes before reading it, and closes the connection',
    async (path) => {
      const answer = await partialPost(`${BASE}${path}`);
      expect(answer.startsWith(`HTTP/1.1 ${SESSION_REFUSED.status} `)).toBe(true);
      expect(answer.endsWith(SESSION_REFUSED.body.toString())).toBe(true);
    },
  );

  it('refuses a forged vouching (another key) the same way, and one signed for another path', async () => {
    const voucher = voucherFromServingChain(r.gatewayCert.chainPem, r.gatewayCert.privateKeyPem);
    const otherPath = vouchHeaders(voucher, null, Buffer.alloc(0), `${BASE}${SESSION_WATCH_PATH}`)[VOUCH_HEADER]!;
    const answer = await partialPost(`${BASE}${SESSION_LEASE_PATH}`, { [VOUCH_HEADER]: otherPath });
    expect(answer.endsWith(SESSION_REFUSED.body.toString())).toBe(true);
    const [payload] = otherPath.split('.');
    const forged = await partialPost(`${BASE}${SESSION_LEASE_PATH}`, { [VOUCH_HEADER]: `${payload}.${'A'.repeat(86)}` });
    expect(forged.endsWith(SESSION_REFUSED.body.toString())).toBe(true);
  });

  it('a vouching of this path for another body still reads the body and is refused by its hash', async () => {
    const voucher = voucherFromServingChain(r.gatewayCert.chainPem, r.gatewayCert.privateKeyPem);
    const path = `${BASE}${SESSION_LEASE_PATH}`;
    const body = Buffer.from('{"closed":[]}');
    const headers = vouchHeaders(voucher, null, Buffer.from('{"other":true}'), path);
    const answer = await fetch(`${r.apiUrl}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
    expect(answer.status).toBe(SESSION_REFUSED.status);
    expect(Buffer.from(await answer.arrayBuffer()).equals(SESSION_REFUSED.body)).toBe(true);
  });
});
