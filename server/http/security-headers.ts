/**
 * The headers every answer carries, set by the boot server before anything (the join fast path, Next, a
 * refusal) writes its own. The console's pages replace the fallback CSP with one that carries a per-request
 * nonce (proxy.ts); everything else keeps these.
 */
const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The console's policy: scripts only from us or carrying the request's nonce; nobody may frame it. */
export function consoleCsp(nonce?: string, options: { dev?: boolean } = {}): string {
  const script = nonce ? `'self' 'nonce-${nonce}' 'strict-dynamic'` : "'self'";
  return [
    "default-src 'self'",
    `script-src ${script}${options.dev ? " 'unsafe-eval'" : ''}`,
    // React writes style attributes; styles cannot run code, so inline styles stay allowed.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function securityHeaders(pathname: string, publicUrl = process.env.NEXTAUTH_URL): Record<string, string> {
  const isApi = pathname === '/api' || pathname.startsWith('/api/');
  const headers: Record<string, string> = {
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'content-security-policy': isApi ? API_CSP : consoleCsp(),
  };
  // API answers name tenants, keys and tokens: no cache keeps them (the public documents set their own).
  if (isApi) headers['cache-control'] = 'no-store';
  if (publicUrl?.toLowerCase().startsWith('https://')) headers['strict-transport-security'] = 'max-age=31536000';
  return headers;
}
