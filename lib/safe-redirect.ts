/**
 * A post-sign-in destination taken from the query string, accepted only as a same-origin path: anything
 * else (`https://…`, `//evil.example`, `/\evil`) falls back to `fallback`, so /login cannot be used as an
 * open redirect.
 */
export function safeRedirectPath(value: string | null | undefined, fallback = '/'): string {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return fallback;
  if (/[\u0000-\u001f]/.test(value)) return fallback;
  return value;
}
