import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TpmClient, TpmError } from './client';
import { openTpmTransport, parseTpmAddress } from './transport';

describe('BCD_TPM / --tpm', () => {
  it('defaults to the kernel resource manager and takes device paths and swtpm:HOST:PORT', () => {
    expect(parseTpmAddress(undefined)).toEqual({ kind: 'device', path: '/dev/tpmrm0' });
    expect(parseTpmAddress('  ')).toEqual({ kind: 'device', path: '/dev/tpmrm0' });
    expect(parseTpmAddress('/dev/tpm0')).toEqual({ kind: 'device', path: '/dev/tpm0' });
    expect(parseTpmAddress('swtpm:127.0.0.1:2321')).toEqual({ kind: 'swtpm', host: '127.0.0.1', port: 2321 });
    expect(parseTpmAddress('swtpm:[::1]:2321')).toEqual({ kind: 'swtpm', host: '::1', port: 2321 });
  });

  it('refuses anything else with a message naming the setting', () => {
    expect(() => parseTpmAddress('swtpm:localhost')).toThrow(/BCD_TPM: "swtpm:localhost" is neither/);
    expect(() => parseTpmAddress('swtpm:localhost:0')).toThrow(/port 0 is out of range/);
    expect(() => parseTpmAddress('mssim:localhost:2321')).toThrow(/neither a device path/);
  });
});

describe('the swtpm socket transport', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  /** A fake TPM that answers every command with `response`, written one byte at a time. */
  async function fakeTpm(response: Buffer): Promise<number> {
    server = createServer((socket) =>
      socket.on('data', () => {
        // Fire-and-forget: the bytes trickle out while the client reads them.
        void (async () => {
          for (const byte of response) {
            socket.write(Buffer.of(byte));
            await new Promise((r) => setImmediate(r));
          }
        })();
      }),
    );
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return (server.address() as { port: number }).port;
  }

  it('reassembles a response that arrives in pieces, by the size in its header', async () => {
    // TPM2_GetCapability's answer: one TPM_PT_MANUFACTURER property, "IBM".
    const answer = Buffer.from('8001' + '0000001b' + '00000000' + '00' + '00000006' + '00000001' + '00000105' + '49424d00', 'hex');
    const port = await fakeTpm(answer);
    const client = new TpmClient(await openTpmTransport({ kind: 'swtpm', host: '127.0.0.1', port }));
    expect(await client.getProperty(0x105)).toBe(0x49424d00);
    await client.close();
  });

  it('turns a response code into a TpmError naming the command', async () => {
    const port = await fakeTpm(Buffer.from('8001' + '0000000a' + '0000098e', 'hex'));
    const client = new TpmClient(await openTpmTransport({ kind: 'swtpm', host: '127.0.0.1', port }));
    const failure = client.readPublic(0x81000001);
    await expect(failure).rejects.toBeInstanceOf(TpmError);
    await expect(failure).rejects.toThrow('TPM2_ReadPublic failed: TPM_RC 0x98e');
    await client.close();
  });

  it('says where it could not connect', async () => {
    await expect(openTpmTransport({ kind: 'swtpm', host: '127.0.0.1', port: 1 })).rejects.toThrow(/cannot talk to swtpm at 127.0.0.1:1/);
  });
});
