import http2 from 'node:http2';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePki } from '../../test/pki/fixtures';
import { unrelayedGateway } from '../../test/local-gateway';
import type { GatewayServer } from './gateway';
import { gatewayLimitsFromEnv, GATEWAY_LIMITS } from './limits';

// HTTP/2 streams per connection are bounded: the gateway announces SETTINGS_MAX_CONCURRENT_STREAMS and refuses
// the streams of a client that opens more than that anyway (a hand-written client that ignores the setting).

const { bundle } = fixturePki();
// Nothing is relayed (unrelayedGateway): the streams below never finish their body, so the gateway never calls the API.
const SESSION = '/api/compute/v1/session';

const frame = (type: number, flags: number, streamId: number, payload: Buffer) => {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
};
/** HPACK "literal without indexing, indexed name" with a plain (not Huffman) value shorter than 127 bytes. */
const literal = (nameIndex: number, value: string) => Buffer.concat([Buffer.from([nameIndex, value.length]), Buffer.from(value)]);
// :method POST (static 3) and :scheme https (static 7) indexed; :path (4) and :authority (1) literal.
const headerBlock = Buffer.concat([Buffer.from([0x83, 0x87]), literal(4, SESSION), literal(1, 'localhost')]);
const FRAME = { HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, GOAWAY: 7 } as const;
const END_HEADERS = 0x4;

/**
 * Opens `count` streams at once on one connection, each a request whose body never comes (so each would stay
 * open), without waiting for the server's SETTINGS. Answers the streams the server refused (RST_STREAM) and
 * the last stream id it processed when it sent GOAWAY (null: none), after `settleMs` of reading.
 */
async function floodStreams(port: number, count: number, settleMs = 1_500) {
  const socket = tls.connect({
    port,
    host: '127.0.0.1',
    servername: 'localhost',
    ca: bundle.servingCa.certificatePem,
    ALPNProtocols: ['h2'],
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  expect(socket.alpnProtocol).toBe('h2');
  const refused = new Set<number>();
  let goAwayLastStream: number | null = null;
  let announced: number | null = null;
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const type = pending[3]!;
      const flags = pending[4]!;
      const streamId = pending.readUInt32BE(5) & 0x7fffffff;
      const payload = pending.subarray(9, 9 + length);
      if (type === FRAME.RST_STREAM) refused.add(streamId);
      if (type === FRAME.GOAWAY) goAwayLastStream = payload.readUInt32BE(0) & 0x7fffffff;
      if (type === FRAME.SETTINGS && !(flags & 1))
        for (let i = 0; i + 6 <= payload.length; i += 6) if (payload.readUInt16BE(i) === 3) announced = payload.readUInt32BE(i + 2);
      pending = pending.subarray(9 + length);
    }
  });
  socket.on('error', () => {});
  const frames = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))];
  for (let i = 0; i < count; i++) frames.push(frame(FRAME.HEADERS, END_HEADERS, 2 * i + 1, headerBlock));
  socket.write(Buffer.concat(frames));
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  socket.destroy();
  const streamIds = Array.from({ length: count }, (_, i) => 2 * i + 1);
  const accepted = streamIds.filter((id) => !refused.has(id) && (goAwayLastStream === null || id <= goAwayLastStream));
  return { accepted: accepted.length, announced };
}

describe('HTTP/2 streams per connection', () => {
  let server: GatewayServer;
  let port: number;
  beforeAll(async () => {
    ({ server, port } = await unrelayedGateway({ maxConcurrentStreams: 10 }));
  });
  afterAll(() => server.shutdown());

  it('are announced to a client that reads the settings', async () => {
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca: bundle.servingCa.certificatePem, servername: 'localhost' });
    try {
      await new Promise<void>((resolve, reject) => {
        session.once('remoteSettings', () => resolve());
        session.once('error', reject);
      });
      expect(session.remoteSettings.maxConcurrentStreams).toBe(10);
    } finally {
      session.destroy();
    }
  });

  it('cannot be opened past the limit by a client that ignores it', async () => {
    const { accepted, announced } = await floodStreams(port, 100);
    expect(accepted).toBeGreaterThan(0);
    expect(accepted).toBeLessThanOrEqual(10);
    expect(announced).toBe(10);
  });
});

describe('the stream limit', () => {
  it('defaults to 32 and reads BETTER_COMPUTE_GATEWAY_MAX_STREAMS (8 to 1,000)', () => {
    expect(GATEWAY_LIMITS.maxConcurrentStreams).toBe(32);
    expect(gatewayLimitsFromEnv({}).maxConcurrentStreams).toBe(32);
    expect(gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_MAX_STREAMS: '64' }).maxConcurrentStreams).toBe(64);
    expect(() => gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_MAX_STREAMS: '0' })).toThrow(/BETTER_COMPUTE_GATEWAY_MAX_STREAMS/);
    expect(() => gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_MAX_STREAMS: '100000' })).toThrow(/8 to 1000/);
  });
});
