import { chmod, chown, lstat, mkdir, rename, stat, unlink } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { assertNodeKey, blobOf, HelperRefusal, type HelperOps } from './tpm-ops';
import {
  encodeFrame,
  FrameError,
  FrameReader,
  helperRequestSchema,
  isSignableMessage,
  MAX_REQUEST_BYTES,
  type HelperRequest,
} from './wire';

/** Connections served at once; Node closes any more at once (the node's renewal retries). */
const MAX_CONNECTIONS = 8;
/** A connection that has not sent its whole request by then is closed. */
const REQUEST_TIMEOUT_MS = 5_000;

interface HelperServerOptions {
  socketPath: string;
  /** The `[helper]` user: the socket is theirs, mode 0600, so only they (and root) can connect. */
  owner: { uid: number; gid: number };
  ops: HelperOps;
  log?: (line: string) => void;
}

/**
 * Listens on `socketPath` for `bcd node`'s requests. The socket file is made with umask 0177 (never readable or
 * writable by anyone else, even for an instant), then handed to the `[helper]` user and renamed into place. Node exposes no SO_PEERCRED,
 * so the socket's owner and mode (and its directory's) are what limit who can connect. Each connection carries one
 * request of at most {@link MAX_REQUEST_BYTES}; a malformed, oversized, unknown or slow request is answered
 * `refused` (when an answer can still be framed) and the connection closed.
 */
export async function startHelperServer(options: HelperServerOptions): Promise<Server> {
  const { socketPath, owner, ops } = options;
  const log = options.log ?? (() => {});
  const dir = path.dirname(socketPath);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  // Whoever can write the directory could put a socket of their own in the helper's place.
  const dirStat = await stat(dir);
  if (dirStat.uid !== process.getuid?.() || (dirStat.mode & 0o022) !== 0)
    throw new Error(`${dir} must belong to the helper's user and be writable by no one else (bcd-helper.service makes it)`);
  // A stale socket from a previous run is replaced; anything else at that path is left alone.
  const existing = await lstat(socketPath).catch(() => null);
  if (existing && !existing.isSocket()) throw new Error(`${socketPath} exists and is not a socket`);
  // Bound under a temporary name, handed to the user, then renamed into place: a node never finds the socket
  // before it is theirs.
  const staging = `${socketPath}.${process.pid}.new`;
  await unlink(staging).catch(() => {});
  const server = createServer({ allowHalfOpen: true }, (socket) => serve(socket, ops, log));
  server.maxConnections = MAX_CONNECTIONS;
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(staging, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  await chown(staging, owner.uid, owner.gid);
  await chmod(staging, 0o600);
  await rename(staging, socketPath);
  log(`bcd helper listening on ${socketPath} for uid ${owner.uid}`);
  return server;
}

function serve(socket: Socket, ops: HelperOps, log: (line: string) => void): void {
  const reader = new FrameReader(MAX_REQUEST_BYTES);
  let done = false;
  const finish = (answer: unknown) => {
    if (done) return;
    done = true;
    socket.end(encodeFrame(answer));
  };
  const refuse = (message: string) => {
    log(`bcd helper refused a request: ${message}`);
    finish({ ok: false, error: 'refused', message });
  };
  socket.setTimeout(REQUEST_TIMEOUT_MS, () => {
    refuse('the request did not arrive in time');
    socket.destroy();
  });
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    if (done) return socket.destroy();
    let body: Buffer | null;
    try {
      body = reader.push(chunk);
    } catch (error) {
      refuse(error instanceof FrameError ? error.message : 'unreadable request');
      return void socket.destroy();
    }
    if (!body) return;
    socket.pause();
    let request: HelperRequest;
    try {
      const parsed = helperRequestSchema.safeParse(JSON.parse(body.toString('utf8')));
      if (!parsed.success) return refuse('not a request bcd helper serves');
      request = parsed.data;
    } catch {
      return refuse('the request is not JSON');
    }
    answer(request, ops).then(finish, (error: Error) => {
      if (error instanceof HelperRefusal) return refuse(error.message);
      log(`bcd helper: ${request.op} failed: ${error.message}`);
      finish({ ok: false, error: 'failed', message: error.message.slice(0, 500) });
    });
  });
  socket.on('end', () => {
    if (!done) refuse('the request ended early');
  });
}

async function answer(request: HelperRequest, ops: HelperOps): Promise<unknown> {
  if (request.op === 'sign') {
    const message = Buffer.from(request.message, 'base64');
    if (!isSignableMessage(request.purpose, message)) throw new HelperRefusal(`the message is not a ${request.purpose} message`);
    const key = blobOf(request.key);
    assertNodeKey(key);
    const { r, s } = await ops.sign(key, message);
    return { ok: true, r: r.toString('base64'), s: s.toString('base64') };
  }
  if ((request.ak === null) !== (request.akStatement === null)) throw new HelperRefusal('an AK and its statement go together');
  const next = await ops.nextKey({ ak: request.ak && blobOf(request.ak), akStatement: request.akStatement });
  return {
    ok: true,
    key: { public: next.key.publicArea.toString('base64'), private: next.key.privateBlob.toString('base64') },
    csr: next.csrDer.toString('base64'),
    keyAttestation: next.keyAttestation,
  };
}
