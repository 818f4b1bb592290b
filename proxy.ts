import { NextResponse, type NextRequest } from 'next/server';
import { RETURN_PATH_HEADER } from '@/lib/login-url';
import { consoleCsp } from '@/server/http/security-headers';

/**
 * The console's Content Security Policy with a fresh nonce per page: Next reads the nonce from the
 * request's CSP header and puts it on its own scripts, so no inline script runs without it. Every page is
 * rendered per request (the root layout reads the session), which nonces need. API routes and static
 * files are left out: they run no script, the boot server gives them their own headers, and a proxy that
 * matched /api would make Next buffer request bodies for it.
 */
export function proxy(request: NextRequest) {
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const policy = consoleCsp(nonce, { dev: process.env.NODE_ENV === 'development' });
  const headers = new Headers(request.headers);
  headers.set('x-nonce', nonce);
  headers.set('content-security-policy', policy);
  // The page asked for, so a console page that finds no session can send the operator back here after sign-in.
  headers.set(RETURN_PATH_HEADER, request.nextUrl.pathname + request.nextUrl.search);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set('content-security-policy', policy);
  return response;
}

export const config = {
  matcher: [
    {
      source: '/((?!api/|_next/static|_next/image|favicon.ico|icon.svg).*)',
      missing: [
        { type: 'header', key: 'next-router-prefetch' },
        { type: 'header', key: 'purpose', value: 'prefetch' },
      ],
    },
  ],
};
