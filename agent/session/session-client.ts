import http2 from 'node:http2';
import type { KeyObject } from 'node:crypto';
import { verifyEnvelope } from '../../protocol/envelope';
import { DEFAULT_BASE_PATH } from '../join';
import { connectGateway, type GatewayTarget } from '../renew/gateway-client';
import type { NodeLoadedIdentity } from '../renew/identity';
import { clientIdentityOf } from '../renew/tpm-renewal';
import { logAgentRequest, newAgentRequestId, REQUEST_ID_HEADER } from '../request-log';
import { SseReader, type ServerEvent } from './sse';
import { verifyTrustedEnvelope } from '../trust/envelope';
import { AgentError } from '../errors';

/** The gateway refused the Hello (the uniform 403): revoked, expired, superseded, or another node's id. */
export class SessionRefusedError extends AgentError {
  constructor() {
    super('REFUSED', 'Session refused');
    this.name = 'SessionRefusedError';
  }
}

/** The `welcome` body (protocol.md "Sessions"). */
interface Welcome {
  status: 'welcome';
  nodeId: string;
  sessionId: string;
  serverTime: number;
  heartbeatSeconds: number;
}

/** An open session: its welcome, its connection (for renewals on it) and how it ends. */
export interface AgentSession {
  welcome: Welcome;
  since: Date;
  lastHeartbeat: Date;
  /** The certificate the session was opened with expires then; the server ends the session at that time. */
  certificateNotAfter: Date;
  /** Resolves when the stream or the connection ends, for whatever reason. */
  ended: Promise<void>;
  /** POSTs JSON on the session's HTTP/2 connection (no new TLS handshake): status and body. */
  post(pathname: string, body: string, timeoutMs?: number): Promise<{ status: number; body: Buffer }>;
  close(): void;
}

interface OpenSessionOptions {
  basePath?: string;
  agentVersion: string;
  /** The join-signing key (its pin is in the agent's config); when given, the welcome must verify under it. */
  signingKey?: KeyObject;
  /**
   * The trusted join-signing keys by pin (the trust set's); when given, the welcome must verify under one of
   * them (`sig`, or a `sigs` entry of a trusted pin). Takes precedence over `signingKey`.
   */
  signingKeys?: ReadonlyMap<string, KeyObject>;
  /** Hello's `trustVersion`: the version of the trust set held (0 for none). */
  trustVersion?: number;
  /** Hello's `commandKinds`: the command kinds this agent runs; omitted when absent or empty. */
  commandKinds?: readonly string[];
  timeoutMs?: number;
  /** Every event after the welcome (heartbeats included), with the session it came on. */
  onEvent?: (event: ServerEvent, session: AgentSession) => void;
}

function readAll(stream: http2.ClientHttp2Stream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/**
 * Opens a session: mutual TLS with the current certificate over HTTP/2 (ALPN `h2`, the pinned serving CA
 * checked before a byte is sent), the Hello, and the `welcome` read and checked (signature when the key is
 * given, then that it names this node). The stream stays open; `ended` settles when it closes.
 *
 * @throws SessionRefusedError on the uniform 403; Error on anything else (a 503 while the API restarts, a
 *   network error, a welcome that does not check out): retry with backoff.
 */
export async function openSession(target: GatewayTarget, current: NodeLoadedIdentity, options: OpenSessionOptions): Promise<AgentSession> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const basePath = options.basePath ?? DEFAULT_BASE_PATH;
  // The Hello's line is written when its answer's head arrives (or it fails): the stream itself stays open.
  const hello = { requestId: newAgentRequestId(), method: 'POST', path: `${basePath}/v1/session`, startedAt: performance.now() };
  let helloLogged = false;
  const logHello = (status: number | null) => {
    if (!helloLogged) logAgentRequest({ ...hello, status });
    helloLogged = true;
  };
  // A TPM-held key signs the handshake in the TPM (agent/tls13); the session runs the same over either socket.
  const socket = await connectGateway(target, clientIdentityOf(current), timeoutMs, ['h2']).catch((error: unknown) => {
    logHello(null);
    throw error;
  });
  if (socket.alpnProtocol !== 'h2') {
    socket.destroy();
    throw new Error('the gateway does not speak HTTP/2');
  }
  const connection = http2.connect(target.gatewayUrl, { createConnection: () => socket });
  connection.on('error', () => {});
  const ended = new Promise<void>((resolve) => connection.once('close', () => resolve()));
  const body = JSON.stringify({
    nodeId: current.identity.nodeId,
    agentVersion: options.agentVersion,
    trustVersion: options.trustVersion ?? 0,
    ...(options.commandKinds?.length ? { commandKinds: options.commandKinds } : {}),
  });
  const stream = connection.request({
    ':method': 'POST',
    ':path': hello.path,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    [REQUEST_ID_HEADER]: hello.requestId,
  });
  stream.end(body);
  try {
    const session = await new Promise<AgentSession>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the gateway did not welcome the session within ${timeoutMs} ms`)), timeoutMs);
      stream.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      stream.once('close', () => {
        clearTimeout(timer);
        reject(new Error('the session stream closed before its welcome'));
      });
      stream.once('response', (headers) => {
        const status = Number(headers[':status']);
        logHello(status);
        if (status !== 200) {
          clearTimeout(timer);
          void readAll(stream)
            .catch(() => Buffer.alloc(0))
            .then(() => reject(status === 403 ? new SessionRefusedError() : new Error(`the gateway answered ${status}`)));
          return;
        }
        const reader = new SseReader();
        let session: AgentSession | null = null;
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          for (const event of reader.push(chunk)) {
            if (!session) {
              clearTimeout(timer);
              try {
                session = startSession(event);
                resolve(session);
              } catch (error) {
                reject(error);
                connection.destroy();
              }
              continue;
            }
            if (event.type === 'heartbeat') session.lastHeartbeat = new Date();
            options.onEvent?.(event, session);
          }
        });
      });
    });
    stream.once('close', () => connection.close());
    return session;
  } catch (error) {
    logHello(null);
    connection.destroy();
    throw error;
  }

  function startSession(event: ServerEvent): AgentSession {
    if (event.type !== 'welcome') throw new Error(`the session began with ${event.type}, not welcome`);
    const envelope = event.data as { body: string; sig: string };
    const welcome = (
      options.signingKeys
        ? verifyTrustedEnvelope(envelope, options.signingKeys)
        : options.signingKey
          ? verifyEnvelope(envelope, options.signingKey)
          : JSON.parse(Buffer.from(String(envelope?.body), 'base64url').toString('utf8'))
    ) as Welcome;
    if (welcome?.status !== 'welcome' || welcome.nodeId !== current.identity.nodeId || typeof welcome.sessionId !== 'string') {
      throw new Error('the welcome does not name this node');
    }
    const now = new Date();
    return {
      welcome,
      since: now,
      lastHeartbeat: now,
      certificateNotAfter: current.notAfter,
      ended,
      post: (pathname, text, postTimeoutMs = 30_000) =>
        new Promise((resolve, reject) => {
          const line = { requestId: newAgentRequestId(), method: 'POST', path: pathname, startedAt: performance.now() };
          const call = connection.request({
            ':method': 'POST',
            ':path': pathname,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(text),
            [REQUEST_ID_HEADER]: line.requestId,
          });
          call.setTimeout(postTimeoutMs, () => call.close(http2.constants.NGHTTP2_CANCEL));
          let status = 0;
          call.once('response', (headers) => (status = Number(headers[':status'])));
          readAll(call).then(
            (bytes) => {
              logAgentRequest({ ...line, status: status || null });
              if (status) resolve({ status, body: bytes });
              else reject(new Error('the gateway did not answer'));
            },
            (error: unknown) => {
              logAgentRequest({ ...line, status: status || null });
              reject(error);
            },
          );
          call.end(text);
        }),
      close: () => {
        stream.close();
        connection.close();
      },
    };
  }
}
