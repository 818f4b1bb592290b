import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { ALERT, TlsAlertError } from './alerts';
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
import { RecordCipher } from './record';
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

/** What the handshake is told by its caller. */
export interface ClientHandshakeOptions {
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
}

/** The record layer under the handshake: the connection that carries its messages and takes its keys. */
interface HandshakeRecords {
  /** Writes a handshake message (framed) under the current write keys, or in plaintext before there are any. */
  writeHandshake(message: Buffer): void;
  /** Writes the middlebox-compatibility change_cipher_spec (plaintext). */
  writeChangeCipherSpec(): void;
  readWith(cipher: RecordCipher): void;
  writeWith(cipher: RecordCipher): void;
  /** The connection was torn down (while the signer was at work). */
  isDestroyed(): boolean;
  /** Our side may still write (to answer a KeyUpdate). */
  canWrite(): boolean;
  /** The handshake completed: the server verified and our Finished sent. */
  connected(): void;
}

type State = 'server-hello' | 'encrypted-extensions' | 'certificate' | 'certificate-verify' | 'finished' | 'signing' | 'connected';

/** The largest handshake message accepted (a server certificate chain fits comfortably). */
const MAX_HANDSHAKE_MESSAGE = 64 * 1024;

/**
 * The client's side of the TLS 1.3 handshake (RFC 8446) as a state machine over handshake records: the
 * transcript, the key schedule's secrets, the server's messages checked in order, and the client's flight.
 * After the handshake it handles the post-handshake messages (NewSessionTicket, KeyUpdate).
 */
export class ClientHandshake {
  state: State = 'server-hello';
  /** The protocol ALPN settled on, or false. */
  alpnProtocol: string | false = false;
  /** The server's chain as it was verified, leaf first. */
  peerCertificates: Buffer[] = [];
  /** The alert sent when an error that is not a TlsAlertError ends the connection. */
  alertOnFailure: number | null = null;

  private readonly transcript: Buffer[] = [];
  private buffer: Buffer = Buffer.alloc(0);
  private secrets: { handshake?: Buffer; clientHs?: Buffer; serverHs?: Buffer; clientAp?: Buffer; serverAp?: Buffer } = {};
  private certificateRequest: { context: Buffer; schemes: number[] } | null = null;
  private leafKey: X509Certificate | null = null;
  private readonly clientHello: Buffer;
  private readonly shares: KeyShares;

  constructor(
    private readonly options: ClientHandshakeOptions,
    private readonly records: HandshakeRecords,
  ) {
    this.shares = makeKeyShares();
    const serverName = options.serverName && isIP(options.serverName) === 0 ? options.serverName : undefined;
    this.clientHello = clientHelloBody({ shares: this.shares, serverName, alpn: options.alpn ?? [] });
  }

  /** Sends the ClientHello. */
  start() {
    this.send(HANDSHAKE.clientHello, this.clientHello);
  }

  private send(type: number, body: Buffer) {
    const message = handshakeMessage(type, body);
    this.transcript.push(message);
    this.records.writeHandshake(message);
  }

  private transcriptHash = () => hash(Buffer.concat(this.transcript));

  /** Handles the fragment of a handshake record: the messages it completes, in order. */
  async receive(fragment: Buffer) {
    if (fragment.length === 0) throw new TlsAlertError(ALERT.unexpectedMessage, 'an empty handshake record');
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, fragment]) : fragment;
    while (this.buffer.length >= 4) {
      const length = this.buffer.readUIntBE(1, 3);
      if (length > MAX_HANDSHAKE_MESSAGE) throw new TlsAlertError(ALERT.decodeError, `a handshake message of ${length} bytes`);
      if (this.buffer.length < 4 + length) break;
      const message = this.buffer.subarray(0, 4 + length);
      this.buffer = this.buffer.subarray(4 + length);
      const keysChange = await this.receiveMessage(message[0]!, message.subarray(4), message);
      // Handshake messages must not span a change of keys (§5.1).
      if (keysChange && this.buffer.length)
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
        this.records.readWith(new RecordCipher(s.serverHandshakeTraffic));
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
        this.records.readWith(new RecordCipher(ap.serverApplicationTraffic));
        this.state = 'signing';
        await this.sendClientFlight();
        this.state = 'connected';
        this.records.connected();
        return true;
      }
      case 'signing':
      case 'connected':
        return this.receivePostHandshake(type, body);
    }
  }

  /** The client's second flight: change_cipher_spec (compatibility), Certificate and CertificateVerify when asked, Finished. */
  private async sendClientFlight() {
    this.records.writeChangeCipherSpec();
    this.records.writeWith(new RecordCipher(this.secrets.clientHs!));
    if (this.certificateRequest) {
      const signer = this.options.signer;
      if (signer && !this.certificateRequest.schemes.includes(signer.scheme))
        throw new TlsAlertError(ALERT.handshakeFailure, `the server does not accept signature scheme ${signer.scheme}`);
      this.send(HANDSHAKE.certificate, certificateBody(this.certificateRequest.context, signer?.certificateChain ?? []));
      if (signer) {
        const signature = await signer.sign(certificateVerifyContent('client', this.transcriptHash()));
        if (this.records.isDestroyed()) return;
        this.send(HANDSHAKE.certificateVerify, certificateVerifyBody(signer.scheme, signature));
      }
    }
    this.send(HANDSHAKE.finished, finishedVerifyData(this.secrets.clientHs!, this.transcriptHash()));
    this.records.writeWith(new RecordCipher(this.secrets.clientAp!));
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
    this.records.readWith(new RecordCipher(this.secrets.serverAp));
    if (requested === 1 && this.state === 'connected' && this.records.canWrite()) {
      this.records.writeHandshake(handshakeMessage(HANDSHAKE.keyUpdate, Buffer.from([0])));
      this.secrets.clientAp = nextTrafficSecret(this.secrets.clientAp!);
      this.records.writeWith(new RecordCipher(this.secrets.clientAp));
    }
    return true;
  }
}
