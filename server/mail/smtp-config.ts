import { DomainError } from '../../protocol/errors';

const SMTP_URL_ENV = 'BETTER_COMPUTE_SMTP_URL';
const SMTP_FROM_ENV = 'BETTER_COMPUTE_SMTP_FROM';

/** Where invitation mail goes out: parsed from BETTER_COMPUTE_SMTP_URL and BETTER_COMPUTE_SMTP_FROM. */
export interface SmtpConfig {
  host: string;
  port: number;
  /** `smtps://`: TLS from the first byte (port 465 by default); `smtp://` upgrades with STARTTLS when offered. */
  secure: boolean;
  auth?: { user: string; pass: string };
  from: string;
  /** The URL with the password replaced by `***`: the only form of it that may appear in a log or message. */
  display: string;
}

// `Name <addr@host>` or a bare `addr@host`; no line breaks, so a From header cannot be split into two.
const FROM_PATTERN = /^(?:[^<>\r\n]*<[^<>\s@]+@[^<>\s@]+>|[^<>\s@]+@[^<>\s@]+)$/;

/** The URL as it may be shown: the password (if any) as `***`, and nothing at all when it does not parse. */
function displayOf(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return raw.replace(/\/\/([^/@]*):[^/@]*@/, '//$1:***@');
  }
}

/**
 * The SMTP settings, or null when BETTER_COMPUTE_SMTP_URL is unset (invitations are then only shown as a
 * link). Throws INVALID_CONFIG with a message that never holds the password. The sender defaults to
 * `Better Compute <no-reply@<host of NEXTAUTH_URL>>`.
 */
export function smtpConfigFromEnv(env: Record<string, string | undefined> = process.env): SmtpConfig | null {
  const raw = env[SMTP_URL_ENV];
  if (raw === undefined || raw === '') return null;
  const display = displayOf(raw);
  const invalid = (why: string) =>
    new DomainError(
      'INVALID_CONFIG',
      `${SMTP_URL_ENV} must be smtp://user:pass@host:port or smtps://user:pass@host:port (${why}), not ${display}`,
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('not a URL');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw invalid('the scheme is smtp or smtps');
  if (!url.hostname) throw invalid('a host is needed');
  // Anything after the authority would be silently ignored (nodemailer reads options from a query string).
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) throw invalid('nothing may follow host:port');
  if (!url.username && url.password) throw invalid('a password needs a user');
  const secure = url.protocol === 'smtps:';
  const port = url.port ? Number(url.port) : secure ? 465 : 587;
  let auth: SmtpConfig['auth'];
  try {
    auth = url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined;
  } catch {
    throw invalid('the user and password are percent-encoded');
  }
  const from = env[SMTP_FROM_ENV]?.trim() || defaultFrom(env.NEXTAUTH_URL);
  if (!FROM_PATTERN.test(from)) {
    throw new DomainError(
      'INVALID_CONFIG',
      `${SMTP_FROM_ENV} must be an address, as \`Better Compute <no-reply@example.com>\` or \`no-reply@example.com\`, not ${from}`,
    );
  }
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port, secure, auth, from, display };
}

function defaultFrom(publicUrl: string | undefined): string {
  let host = 'localhost';
  try {
    if (publicUrl) host = new URL(publicUrl).hostname || host;
  } catch {
    // An unparsable NEXTAUTH_URL falls back to localhost; the From check below still applies.
  }
  return `Better Compute <no-reply@${host}>`;
}
