import { Duplex } from 'node:stream';
import net from 'node:net';
import { X509Certificate } from 'node:crypto';
import { ALERT, TlsAlertError, TlsPeerAlertError } from './alerts';
import {
  certificateBody,
  certificateVerifyBody,
  certificateVerifyContent,
  clientHelloBody,
  HANDSHAKE,
  makeKeyShares,
  readCertificate,
  readCertificateRequest,
  readEncryptedExtensions,
  readServerHello,
  verifyServerCertificateVerify,
  type KeyShares,
} from './handshake';
import { applicationSecrets, finishedVerifyData, handshakeSecrets, hash, nextTrafficSecret } from './key-schedule';
import { CONTENT, MAX_PLAINTEXT, plainRecord, RecordCipher, RecordSplitter, type TlsRecord } from './record';
import { handshakeMessage, WireReader } from './wire';

/**
 * Signs the client's CertificateVerify: whatever holds the key behind `certificateChain[0]` (a TPM, or a
 * KeyObject in tests). `sign` receives the whole content to be signed (§4.4.3) and answers the signature as
 * the scheme encodes it (DER `ECDSA-Sig-Value` for ECDSA).
 */
export interface TlsClientSigner {
  /** DER certificates, leaf first. */
  readonly certificateChain: readonly Buffer[];
  /** The SignatureScheme the signature is made with, e.g. 0x0403 ecdsa_secp256r1_sha256. */
  readonly scheme: number;
  sign(content: Buffer): Promise<Buffer>;
}

interface Tls13ConnectOptions {
  host: string;
  port: number;
  /** SNI, sent when it is a DNS name (not an IP address). */
  serverName?: string;
  alpn?: readonly string[];
  /** The client identity, presented when the server asks for one; without it an empty Certificate is sent. */
  signer?: TlsClientSigner;
  /**
   * Decides whether the server's chain (DER, leaf first, as sent) is trusted, before its CertificateVerify is
   * checked and before anything is signed: throw to refuse. There is no default: the caller pins.
   */
  verifyServerChain(chain: readonly Buffer[]): void;
  timeoutMs?: number;
  /** An already connected transport instead of a TCP connection to host:port (tests). */
  transport?: net.Socket;
}

/** The largest handshake message accepted (a server certificate chain fits comfortably). */
const MAX_HANDSHAKE_MESSAGE = 64 * 1024;

type State = 'server-hello' | 'encrypted-extensions' | 'certificate' | 'certificate-verify' | 'finished' | 'signing' | 'connected';

/**
 * A TLS 1.3 client connection (RFC 8446) as a Duplex of application data, for a client key that only an
 * asynchronous signer can use. One suite (TLS_AES_128_GCM_SHA256), x25519 and secp256r1 key shares, no PSK,
 * no resumption, no 0-RTT, no post-handshake authentication. Obtain one with {@link connectTls13}.
 */
export class Tls13Socket extends Duplex {
  /** The protocol ALPN settled on, or false; as TLSSocket names it. */
  alpnProtocol: string | false = false;
  /** The server's chain as it was verified, leaf first. */
  peerCertificates: Buffer[] = [];

  private readonly splitter = new RecordSplitter();
  private readonly transcript: Buffer[] = [];
  private handshakeBuffer: Buffer = Buffer.alloc(0);
  private state: State = 'server-hello';
  private reader: RecordCipher | null = null;
  private writer: RecordCipher | null = null;
  private secrets: { handshake?: Buffer; clientHs?: Buffer; serverHs?: Buffer; clientAp?: Buffer; serverAp?: Buffer } = {};
  private certificateRequest: { context: Buffer; schemes: number[] } | null = null;
  private leafKey: X509Certificate | null = null;
  private processing: Promise<void> = Promise.resolve();
  /** The server's close_notify, or the transport's end, was seen: the readable side has ended. */
  private readEnded = false;
  /** The alert sent when an error that is not a TlsAlertError ends the connection. */
  private alertOnFailure: number | null = null;
  private settle: { resolve(): void; reject(error: Error): void } | null = null;
  private readonly clientHello: Buffer;
  private readonly shares: KeyShares;

  private constructor(
    private readonly socket: net.Socket,
    private readonly options: Tls13ConnectOptions,
  ) {
    super({ allowHalfOpen: false });
    this.shares = makeKeyShares();
    const serverName = options.serverName && net.isIP(options.serverName) === 0 ? options.serverName : undefined;
    this.clientHello = clientHelloBody({ shares: this.shares, serverName, alpn: options.alpn ?? [] });
    socket.on('data', (chunk: Buffer) => {
      this.processing = this.processing.then(() => this.receive(chunk)).catch((error: Error) => this.fail(error));
    });
    socket.on('end', () => {
      // A transport that ends without close_notify: the stream ends as Node's TLS client ends it; HTTP's own
      // framing (content-length, chunked, HTTP/2 frames) tells a truncated answer apart.
      this.processing = this.processing.then(() => {
        if (this.state !== 'connected') this.fail(new Error('TLS: the server closed the connection during the handshake'));
        else this.endReadable();
      });
    });
    socket.on('error', (error) => this.fail(error));
    // After the records already received are handled: the reader sees every byte before the end.
    socket.on('close', () => {
      this.processing = this.processing.then(() => {
        if (this.state !== 'connected') this.fail(new Error('TLS: the connection closed during the handshake'));
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
      const start = () => tls.sendHandshake(HANDSHAKE.clientHello, tls.clientHello);
      if (options.transport) start();
      else socket.once('connect', start);
    });
  }

  private sendHandshake(type: number, body: Buffer) {
    const message = handshakeMessage(type, body);
    this.transcript.push(message);
    if (this.writer) this.socket.write(this.writer.seal(CONTENT.handshake, message));
    else this.socket.write(plainRecord(CONTENT.handshake, message));
  }

  private transcriptHash = () => hash(Buffer.concat(this.transcript));

  private async receive(chunk: Buffer): Promise<void> {
    if (this.destroyed) return;
    for (const raw of this.splitter.push(chunk)) {
      if (raw.type === CONTENT.changeCipherSpec) {
        // Middlebox compatibility: one plaintext 0x01, dropped, and only before the handshake completes (§5).
        if (this.state === 'connected' || raw.fragment.length !== 1 || raw.fragment[0] !== 1)
          throw new TlsAlertError(ALERT.unexpectedMessage, 'an unexpected change_cipher_spec');
        continue;
      }
      const record: TlsRecord = this.reader ? this.reader.open(raw) : raw;
      if (!this.reader && record.type === CONTENT.applicationData)
        throw new TlsAlertError(ALERT.unexpectedMessage, 'application data before keys');
      if (record.type === CONTENT.alert) this.receiveAlert(record.fragment);
      else if (record.type === CONTENT.handshake) await this.receiveHandshake(record.fragment);
      else if (record.type === CONTENT.applicationData) {
        if (this.state !== 'connected' && this.state !== 'signing')
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

  private async receiveHandshake(fragment: Buffer) {
    if (fragment.length === 0) throw new TlsAlertError(ALERT.unexpectedMessage, 'an empty handshake record');
    this.handshakeBuffer = this.handshakeBuffer.length ? Buffer.concat([this.handshakeBuffer, fragment]) : fragment;
    while (this.handshakeBuffer.length >= 4) {
      const length = this.handshakeBuffer.readUIntBE(1, 3);
      if (length > MAX_HANDSHAKE_MESSAGE) throw new TlsAlertError(ALERT.decodeError, `a handshake message of ${length} bytes`);
      if (this.handshakeBuffer.length < 4 + length) break;
      const message = this.handshakeBuffer.subarray(0, 4 + length);
      this.handshakeBuffer = this.handshakeBuffer.subarray(4 + length);
      const keysChange = await this.receiveMessage(message[0]!, message.subarray(4), message);
      // Handshake messages must not span a change of keys (§5.1).
      if (keysChange && this.handshakeBuffer.length)
        throw new TlsAlertError(ALERT.unexpectedMessage, 'handshake data after a message that changes keys');
    }
  }

  /** Handles one handshake message; answers true when the read keys changed after it. */
  private async receiveMessage(type: number, body: Buffer, message: Buffer): Promise<boolean> {
    const expect = (wanted: number) => {
      if (type !== wanted) throw new TlsAlertError(ALERT.unexpectedMessage, `handshake message ${type} in state ${this.state}`);
    };
    switch (this.state) {
      case 'server-hello': {
        expect(HANDSHAKE.serverHello);
        const shared = readServerHello(body, this.clientHello, this.shares);
        this.transcript.push(message);
        const s = handshakeSecrets(shared, this.transcriptHash());
        this.secrets = { handshake: s.handshakeSecret, clientHs: s.clientHandshakeTraffic, serverHs: s.serverHandshakeTraffic };
        this.reader = new RecordCipher(s.serverHandshakeTraffic);
        this.state = 'encrypted-extensions';
        return true;
      }
      case 'encrypted-extensions':
        expect(HANDSHAKE.encryptedExtensions);
        this.alpnProtocol = readEncryptedExtensions(body, this.options.alpn ?? []);
        this.transcript.push(message);
        this.state = 'certificate';
        return false;
      case 'certificate':
        if (type === HANDSHAKE.certificateRequest && !this.certificateRequest) {
          this.certificateRequest = readCertificateRequest(body);
          this.transcript.push(message);
          return false;
        }
        expect(HANDSHAKE.certificate);
        this.peerCertificates = readCertificate(body);
        if (!this.peerCertificates.length) throw new TlsAlertError(ALERT.decodeError, 'the server sent no certificate');
        try {
          this.options.verifyServerChain(this.peerCertificates);
          this.leafKey = new X509Certificate(this.peerCertificates[0]!);
        } catch (error) {
          // The caller's own error (say, the pin did not match) reaches the caller; the server gets bad_certificate.
          this.alertOnFailure = ALERT.badCertificate;
          throw error;
        }
        this.transcript.push(message);
        this.state = 'certificate-verify';
        return false;
      case 'certificate-verify':
        expect(HANDSHAKE.certificateVerify);
        verifyServerCertificateVerify(body, this.leafKey!.publicKey, this.transcriptHash());
        this.transcript.push(message);
        this.state = 'finished';
        return false;
      case 'finished': {
        expect(HANDSHAKE.finished);
        const expected = finishedVerifyData(this.secrets.serverHs!, this.transcriptHash());
        if (body.length !== expected.length || !body.equals(expected))
          throw new TlsAlertError(ALERT.decryptError, "the server's Finished does not verify");
        this.transcript.push(message);
        const ap = applicationSecrets(this.secrets.handshake!, this.transcriptHash());
        this.secrets.clientAp = ap.clientApplicationTraffic;
        this.secrets.serverAp = ap.serverApplicationTraffic;
        this.reader = new RecordCipher(ap.serverApplicationTraffic);
        this.state = 'signing';
        await this.sendClientFlight();
        this.state = 'connected';
        this.settle?.resolve();
        this.settle = null;
        return true;
      }
      case 'signing':
      case 'connected':
        return this.receivePostHandshake(type, body);
    }
  }

  /** The client's second flight: change_cipher_spec (compatibility), Certificate and CertificateVerify when asked, Finished. */
  private async sendClientFlight() {
    this.socket.write(plainRecord(CONTENT.changeCipherSpec, Buffer.from([1])));
    this.writer = new RecordCipher(this.secrets.clientHs!);
    if (this.certificateRequest) {
      const signer = this.options.signer;
      if (signer && !this.certificateRequest.schemes.includes(signer.scheme))
        throw new TlsAlertError(ALERT.handshakeFailure, `the server does not accept signature scheme ${signer.scheme}`);
      this.sendHandshake(HANDSHAKE.certificate, certificateBody(this.certificateRequest.context, signer?.certificateChain ?? []));
      if (signer) {
        const signature = await signer.sign(certificateVerifyContent('client', this.transcriptHash()));
        if (this.destroyed) return;
        this.sendHandshake(HANDSHAKE.certificateVerify, certificateVerifyBody(signer.scheme, signature));
      }
    }
    this.sendHandshake(HANDSHAKE.finished, finishedVerifyData(this.secrets.clientHs!, this.transcriptHash()));
    this.writer = new RecordCipher(this.secrets.clientAp!);
    // Nothing of the handshake is needed any more.
    this.transcript.length = 0;
    this.secrets = { clientAp: this.secrets.clientAp, serverAp: this.secrets.serverAp };
  }

  /** NewSessionTicket is ignored (no resumption); KeyUpdate moves the read keys on, and ours when asked (§4.6.3). */
  private receivePostHandshake(type: number, body: Buffer): boolean {
    if (type === HANDSHAKE.newSessionTicket) return false;
    if (type !== HANDSHAKE.keyUpdate) throw new TlsAlertError(ALERT.unexpectedMessage, `handshake message ${type} after the handshake`);
    const reader = new WireReader(body, 'KeyUpdate');
    const requested = reader.u8();
    reader.end();
    if (requested > 1) throw new TlsAlertError(ALERT.illegalParameter, 'a KeyUpdate with an unknown request');
    this.secrets.serverAp = nextTrafficSecret(this.secrets.serverAp!);
    this.reader = new RecordCipher(this.secrets.serverAp);
    if (requested === 1 && this.state === 'connected' && !this.writableEnded) {
      this.socket.write(this.writer!.seal(CONTENT.handshake, handshakeMessage(HANDSHAKE.keyUpdate, Buffer.from([0]))));
      this.secrets.clientAp = nextTrafficSecret(this.secrets.clientAp!);
      this.writer = new RecordCipher(this.secrets.clientAp);
    }
    return true;
  }

  /** Sends the alert an error names (when the transport is still writable), then tears the connection down. */
  private fail(error: Error) {
    if (this.destroyed) return;
    const description = error instanceof TlsAlertError ? error.alert : this.alertOnFailure;
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
    if (!this.writer || this.state !== 'connected') return callback(new Error('TLS: write before the handshake completed'));
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
