import nodemailer from 'nodemailer';
import type { SmtpConfig } from './smtp-config';

interface PlainMail {
  to: string;
  subject: string;
  text: string;
}

// nodemailer waits up to 2 minutes to connect and 10 minutes on a silent socket; the admin's request waits
// for the send, so a mail server that is down or stuck costs seconds, not minutes.
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };

/**
 * Sends one plain-text mail through the configured server (a connection per mail: invitations are rare).
 * `smtp://` upgrades with STARTTLS whenever the server offers it and the certificate is verified either way
 * (the mail carries a one-time link). Rejects with the transport's error, which callers pass through
 * {@link mailFailureReason} before showing or logging it.
 */
export async function sendPlainMail(config: SmtpConfig, mail: PlainMail): Promise<void> {
  const transport = nodemailer.createTransport({
    host: config.host,
    port: config.port,
    secure: config.secure,
    auth: config.auth,
    ...TIMEOUTS,
  });
  try {
    await transport.sendMail({ from: config.from, to: mail.to, subject: mail.subject, text: mail.text });
  } finally {
    transport.close();
  }
}

/** One line on why a send failed, for the answer and the log: never the password, never a stack. */
export function mailFailureReason(config: SmtpConfig, error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  let message = error instanceof Error ? error.message : String(error);
  const pass = config.auth?.pass;
  if (pass) message = message.split(pass).join('***');
  return `${typeof code === 'string' ? `${code}: ` : ''}${message}`.replace(/\s+/g, ' ').slice(0, 300);
}
