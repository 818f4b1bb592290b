import { AgentError } from '../errors';

/** AlertDescription values this client sends or names (RFC 8446 §6). */
export const ALERT = {
  closeNotify: 0,
  unexpectedMessage: 10,
  badRecordMac: 20,
  recordOverflow: 22,
  handshakeFailure: 40,
  badCertificate: 42,
  certificateExpired: 45,
  illegalParameter: 47,
  unknownCa: 48,
  decodeError: 50,
  decryptError: 51,
  protocolVersion: 70,
  internalError: 80,
  missingExtension: 109,
  unsupportedExtension: 110,
  noApplicationProtocol: 120,
} as const;

/** A fatal condition of the connection: the alert this client sends, and why. */
export class TlsAlertError extends AgentError {
  constructor(
    readonly alert: number,
    message: string,
  ) {
    super('PROTOCOL', `TLS: ${message}`);
    this.name = 'TlsAlertError';
  }
}

/** The peer sent a fatal alert. */
export class TlsPeerAlertError extends AgentError {
  constructor(readonly alert: number) {
    super('PROTOCOL', `TLS: the server sent alert ${alert}${ALERT_NAMES[alert] ? ` (${ALERT_NAMES[alert]})` : ''}`);
    this.name = 'TlsPeerAlertError';
  }
}

const ALERT_NAMES: Record<number, string> = {
  10: 'unexpected_message',
  20: 'bad_record_mac',
  40: 'handshake_failure',
  42: 'bad_certificate',
  45: 'certificate_expired',
  46: 'certificate_unknown',
  47: 'illegal_parameter',
  48: 'unknown_ca',
  50: 'decode_error',
  51: 'decrypt_error',
  70: 'protocol_version',
  80: 'internal_error',
  116: 'certificate_required',
  120: 'no_application_protocol',
};
