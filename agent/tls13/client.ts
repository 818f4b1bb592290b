import { Duplex } from 'node:stream';
import net from 'node:net';
import { ALERT, TlsAlertError, TlsPeerAlertError } from './alerts';
import { ClientHandshake, type ClientHandshakeOptions } from './client-handshake';
import { CONTENT, MAX_PLAINTEXT, plainRecord, RecordCipher, RecordSplitter, type TlsRecord } from './record';

export type { TlsClientSigner } from './client-handshake';

interface Tls13ConnectOptions extends ClientHandshakeOptions {
  host: string;
  port: number;
  timeoutMs?: number;
  /** An already connected transport instead of a TCP connection to host:port (tests). */
  transport?: net.Socket;
}

/**
 * A TLS 1.3 client connection (RFC 8446) as a Duplex of application data, for a client key that only an
 * asynchronous signer can use. One suite (TLS_AES_128_GCM_SHA256), x25519 and secp256r1 key shares, no PSK,
 * no resumption, no 0-RTT, no post-handshake authentication. Obtain one with {@link connectTls13}. The
 * handshake itself is client-handshake.ts; this is its record layer, alerts and the stream.
 */
export class Tls13Socket extends Duplex {
  /** The protocol ALPN settled on, or false; as TLSSocket names it. */
  alpnProtocol: string | false = false;
  /** The server's chain as it was verified, leaf first. */
  peerCertificates: Buffer[] = [];

  private readonly splitter = new RecordSplitter();
  private readonly handshake: ClientHandshake;
  private reader: RecordCipher | null = null;
  private writer: RecordCipher | null = null;
  private processing: Promise<void> = Promise.resolve();
  /** The server's close_notify, or the transport's end, was seen: the readable side has ended. */
  private readEnded = false;
  private settle: { resolve(): void; reject(error: Error): void } | null = null;

  private constructor(
    private readonly socket: net.Socket,
    options: Tls13ConnectOptions,
  ) {
    super({ allowHalfOpen: false });
    this.handshake = new ClientHandshake(options, {
      writeHandshake: (message) =>
        socket.write(this.writer ? this.writer.seal(CONTENT.handshake, message) : plainRecord(CONTENT.handshake, message)),
      writeChangeCipherSpec: () => socket.write(plainRecord(CONTENT.changeCipherSpec, Buffer.from([1]))),
      readWith: (cipher) => (this.reader = cipher),
      writeWith: (cipher) => (this.writer = cipher),
      isDestroyed: () => this.destroyed,
      canWrite: () => !this.writableEnded,
      connected: () => {
        this.alpnProtocol = this.handshake.alpnProtocol;
        this.peerCertificates = this.handshake.peerCertificates;
        this.settle?.resolve();
        this.settle = null;
      },
    });
    socket.on('data', (chunk: Buffer) => {
      this.processing = this.processing.then(() => this.receive(chunk)).catch((error: Error) => this.fail(error));
    });
    socket.on('end', () => {
      // A transport that ends without close_notify: the stream ends as Node's TLS client ends it; HTTP's own
      // framing (content-length, chunked, HTTP/2 frames) tells a truncated answer apart.
      this.processing = this.processing.then(() => {
        if (this.handshake.state !== 'connected') this.fail(new Error('TLS: the server closed the connection during the handshake'));
        else this.endReadable();
      });
    });
    socket.on('error', (error) => this.fail(error));
    // After the records already received are handled: the reader sees every byte before the end.
    socket.on('close', () => {
      this.processing = this.processing.then(() => {
        if (this.handshake.state !== 'connected') this.fail(new Error('TLS: the connection closed during the handshake'));
        else this.endReadable();
      });
    });
  }

  /** Connects, runs the handshake, and resolves once it completed (the server verified and our Finished sent). */
  static connect(options: Tls13ConnectOptions): Promise<Tls13Socket> {
    const socket = options.transport ?? net.connect({ host: options.host, port: options.port });
    const tls = new Tls13Socket(socket, options);
    const timeoutMs = options.timeoutMs ?? 15_000;
    // Until the handshake settles, its failure is the promise's rejection, not an unhandled 'error' event.
    const quiet = () => {};
    tls.on('error', quiet);
    return new Promise<Tls13Socket>((resolve, reject) => {
      const timer = setTimeout(() => tls.fail(new Error(`TLS: the handshake did not finish within ${timeoutMs} ms`)), timeoutMs);
      tls.settle = {
        resolve: () => (clearTimeout(timer), tls.off('error', quiet), resolve(tls)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
      const start = () => tls.handshake.start();
      if (options.transport) start();
      else socket.once('connect', start);
    });
  }

  private async receive(chunk: Buffer): Promise<void> {
    if (this.destroyed) return;
    for (const raw of this.splitter.push(chunk)) {
      if (raw.type === CONTENT.changeCipherSpec) {
        // Middlebox compatibility: one plaintext 0x01, dropped, and only before the handshake completes (§5).
        if (this.handshake.state === 'connected' || raw.fragment.length !== 1 || raw.fragment[0] !== 1)
          throw new TlsAlertError(ALERT.unexpectedMessage, 'an unexpected change_cipher_spec');
        continue;
      }
      const record: TlsRecord = this.reader ? this.reader.open(raw) : raw;
      if (!this.reader && record.type === CONTENT.applicationData)
        throw new TlsAlertError(ALERT.unexpectedMessage, 'application data before keys');
      if (record.type === CONTENT.alert) this.receiveAlert(record.fragment);
      else if (record.type === CONTENT.handshake) await this.handshake.receive(record.fragment);
      else if (record.type === CONTENT.applicationData) {
        if (this.handshake.state !== 'connected' && this.handshake.state !== 'signing')
          throw new TlsAlertError(ALERT.unexpectedMessage, 'application data during the handshake');
        if (this.readEnded) throw new TlsAlertError(ALERT.unexpectedMessage, 'data after close_notify');
        // Backpressure: the transport pauses until the reader asks for more (_read).
        if (record.fragment.length && !this.push(record.fragment)) this.socket.pause();
      } else throw new TlsAlertError(ALERT.unexpectedMessage, `a record of type ${record.type}`);
      if (this.destroyed) return;
    }
  }

  private endReadable() {
    if (this.readEnded) return;
    this.readEnded = true;
    this.push(null);
  }

  private receiveAlert(fragment: Buffer) {
    if (fragment.length !== 2) throw new TlsAlertError(ALERT.decodeError, 'a malformed alert');
    const description = fragment[1]!;
    if (description === ALERT.closeNotify) {
      this.endReadable();
      return;
    }
    if (description === 90) return; // user_canceled: a warning, close_notify follows
    const error = new TlsPeerAlertError(description);
    this.settle?.reject(error);
    this.settle = null;
    this.destroy(error);
  }

  /** Sends the alert an error names (when the transport is still writable), then tears the connection down. */
  private fail(error: Error) {
    if (this.destroyed) return;
    const description = error instanceof TlsAlertError ? error.alert : this.handshake.alertOnFailure;
    if (description !== null && this.socket.writable) {
      const alert = Buffer.from([2, description]);
      try {
        this.socket.write(this.writer ? this.writer.seal(CONTENT.alert, alert) : plainRecord(CONTENT.alert, alert));
      } catch {
        // The alert is a courtesy; the error below is what the caller sees.
      }
    }
    this.settle?.reject(error);
    this.settle = null;
    this.destroy(error);
  }

  override _read() {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void) {
    if (!this.writer || this.handshake.state !== 'connected') return callback(new Error('TLS: write before the handshake completed'));
    let last = true;
    for (let offset = 0; offset < chunk.length; offset += MAX_PLAINTEXT)
      last = this.socket.write(this.writer.seal(CONTENT.applicationData, chunk.subarray(offset, offset + MAX_PLAINTEXT)));
    if (last) callback();
    else this.socket.once('drain', () => callback());
  }

  override _final(callback: (error?: Error | null) => void) {
    if (this.writer && this.socket.writable) this.socket.end(this.writer.seal(CONTENT.alert, Buffer.from([1, ALERT.closeNotify])));
    else this.socket.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void) {
    this.socket.destroy();
    this.settle?.reject(error ?? new Error('TLS: the connection closed during the handshake'));
    this.settle = null;
    callback(error);
  }

  // What node:http and node:http2 call on a socket they were handed.
  setTimeout(ms: number, callback?: () => void) {
    this.socket.setTimeout(ms);
    if (callback) this.socket.once('timeout', callback);
    return this;
  }
  setNoDelay(noDelay?: boolean) {
    this.socket.setNoDelay(noDelay);
    return this;
  }
  setKeepAlive(enable?: boolean, delay?: number) {
    this.socket.setKeepAlive(enable, delay);
    return this;
  }
  ref() {
    this.socket.ref();
    return this;
  }
  unref() {
    this.socket.unref();
    return this;
  }
  get remoteAddress() {
    return this.socket.remoteAddress;
  }
  get remotePort() {
    return this.socket.remotePort;
  }
}

/** Connects a {@link Tls13Socket}: resolves after the handshake completed. */
export const connectTls13 = (options: Tls13ConnectOptions) => Tls13Socket.connect(options);
