import { open, type FileHandle } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';

/**
 * One channel to a TPM: a command's bytes in, the response's bytes out, one at a time. A TPM answers exactly
 * one response per command, and the response header carries its size, so both transports frame by that.
 */
export interface TpmTransport {
  send(command: Buffer): Promise<Buffer>;
  close(): Promise<void>;
}

/** The largest response bcd accepts; TPM2_NV_Read chunks and RSA-2048 public areas are far below it. */
const MAX_RESPONSE_BYTES = 8192;
const HEADER_BYTES = 10;
const DEFAULT_DEVICE = '/dev/tpmrm0';

/** Where the TPM is: the kernel's resource manager, or a software TPM's socket (tests and development). */
export type TpmAddress = { kind: 'device'; path: string } | { kind: 'swtpm'; host: string; port: number };

/**
 * Parses `--tpm` / `BCD_TPM`: empty or unset is `/dev/tpmrm0`, `swtpm:HOST:PORT` the swtpm socket protocol's
 * command port, and a path starting with `/` a TPM character device.
 */
export function parseTpmAddress(value: string | undefined): TpmAddress {
  const text = (value ?? '').trim();
  if (text === '') return { kind: 'device', path: DEFAULT_DEVICE };
  if (text.startsWith('/')) return { kind: 'device', path: text };
  const swtpm = /^swtpm:(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(text);
  if (swtpm) {
    // Both groups of the pattern are required, so a match has them.
    const port = Number(swtpm[2]!);
    if (port < 1 || port > 65535) throw new Error(`BCD_TPM: port ${port} is out of range (1 to 65535)`);
    return { kind: 'swtpm', host: swtpm[1]!.replace(/^\[|\]$/g, ''), port };
  }
  throw new Error(`BCD_TPM: "${text}" is neither a device path (/dev/tpmrm0) nor swtpm:HOST:PORT`);
}

/** How bcd names a TPM address in what it prints: the device path, or `swtpm:HOST:PORT` (an IPv6 host in brackets). */
export function describeTpmAddress(address: string | undefined): string {
  const where = parseTpmAddress(address);
  if (where.kind === 'device') return where.path;
  return `swtpm:${where.host.includes(':') ? `[${where.host}]` : where.host}:${where.port}`;
}

export function openTpmTransport(address: TpmAddress): Promise<TpmTransport> {
  return address.kind === 'device' ? openDevice(address.path) : openSwtpm(address.host, address.port);
}

/**
 * The kernel device. `/dev/tpmrm0` flushes what this file handle loaded when it closes, so one client keeps one
 * handle open for its whole conversation. A write is one command and the following read its whole response.
 */
async function openDevice(path: string): Promise<TpmTransport> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r+');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      `cannot open the TPM at ${path}: ${code === 'EACCES' ? 'permission denied (root or the tss group)' : (code ?? error)}`,
      { cause: error },
    );
  }
  let busy = false;
  return {
    async send(command) {
      if (busy) throw new Error('TPM transport: one command at a time');
      busy = true;
      try {
        await handle.write(command);
        const buffer = Buffer.alloc(MAX_RESPONSE_BYTES);
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
        return checkFrame(buffer.subarray(0, bytesRead));
      } finally {
        busy = false;
      }
    },
    close: () => handle.close(),
  };
}

/**
 * swtpm's socket protocol: the command port carries raw TPM commands and responses, no extra framing (the
 * control port, which bcd never needs, is separate). A response may arrive in several segments.
 */
function openSwtpm(host: string, port: number): Promise<TpmTransport> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host, port });
    let pending: { resolve: (b: Buffer) => void; reject: (e: Error) => void } | undefined;
    let received = Buffer.alloc(0);
    let failure: Error | undefined;
    let connected = false;
    const fail = (error: Error) => {
      failure ??= error;
      pending?.reject(failure);
      pending = undefined;
    };
    socket.once('connect', () => {
      connected = true;
      socket.setNoDelay(true);
      resolve({
        send(command) {
          if (failure) return Promise.reject(failure);
          if (pending) return Promise.reject(new Error('TPM transport: one command at a time'));
          return new Promise<Buffer>((res, rej) => {
            pending = { resolve: res, reject: rej };
            received = Buffer.alloc(0);
            socket.write(command);
          });
        },
        close: () =>
          new Promise<void>((res) => {
            if (socket.destroyed) return res();
            socket.once('close', () => res());
            socket.end();
          }),
      });
    });
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < HEADER_BYTES || !pending) return;
      const size = received.readUInt32BE(2);
      if (size > MAX_RESPONSE_BYTES || size < HEADER_BYTES) return fail(new Error(`TPM response size ${size} is out of bounds`));
      if (received.length < size) return;
      const done = pending;
      pending = undefined;
      done.resolve(checkFrame(received.subarray(0, size)));
    });
    socket.once('error', (error) => {
      const wrapped = new Error(`cannot talk to swtpm at ${host}:${port}: ${error.message}`, { cause: error });
      if (!connected) reject(wrapped);
      fail(wrapped);
    });
    socket.once('close', () => fail(new Error(`swtpm at ${host}:${port} closed the connection`)));
  });
}

function checkFrame(frame: Buffer): Buffer {
  if (frame.length < HEADER_BYTES || frame.readUInt32BE(2) !== frame.length) {
    throw new Error(`malformed TPM response (${frame.length} bytes)`);
  }
  return frame;
}
