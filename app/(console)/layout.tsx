import { cookies, headers } from 'next/headers';
import Link from 'next/link';
import { redirect } from 'next/navigation';
import { Suspense, type ReactNode } from 'react';
import { ConsoleNav } from '@/components/console/console-nav';
import { HydrateQueries } from '@/components/console/hydrate-queries';
import { SignOutButton } from '@/components/console/sign-out-button';
import { TenantSwitcher } from '@/components/console/tenant-switcher';
import { loginUrl, RETURN_PATH_HEADER, SESSION_COOKIE_NAMES } from '@/lib/login-url';
import { nextEntry } from '@/server/boot/next-entry';
import '@/components/console/shell.css';
import { prefetchConsolePage } from './prefetch';

/**
 * Every console page needs a signed-in operator; the check runs on the server, before anything renders. The
 * operator's tenants are read meanwhile, so the shell (tenant switcher, nav) and every page's tenant arrive in
 * the HTML rather than after a "Loading tenants…"; the pages read their own queries (./prefetch.tsx).
 */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const [operator, tenants] = await Promise.all([nextEntry().signedInOperator(), prefetchConsolePage(new URLSearchParams())]);
  if (!operator) {
    // Back to the page asked for after sign-in; a session cookie that no longer counts means it expired or was ended.
    const cookieStore = await cookies();
    const expired = SESSION_COOKIE_NAMES.some((name) => cookieStore.has(name));
    redirect(loginUrl((await headers()).get(RETURN_PATH_HEADER), { expired }));
  }
  // A printed one-time password allows nothing but choosing a new one (the API refuses the rest regardless).
  if (operator.passwordChangeRequired) redirect('/choose-password');
  // Each part that shows the tenants is handed them (its Suspense boundary may hydrate before the others).
  // DOM order is the tab order: brand, tenant, nav, then the account block (placed in the top bar by CSS), then the page.
  return (
    <div className="shell">
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Better Compute
        </Link>
        <Suspense>
          <HydrateQueries state={tenants}>
            <TenantSwitcher />
          </HydrateQueries>
        </Suspense>
      </header>
      <Suspense>
        <HydrateQueries state={tenants}>
          <ConsoleNav />
        </HydrateQueries>
      </Suspense>
      <section className="account" aria-label="Account">
        <div className="operator" role="group" aria-label="Signed-in operator">
          <Link href="/account" className="operator-name" aria-label={`Account of ${operator.name || operator.email}`}>
            {operator.name || operator.email}
          </Link>
          {operator.name && <span className="operator-email">{operator.email}</span>}
        </div>
        <SignOutButton />
      </section>
      <main id="main" className="content">
        <HydrateQueries state={tenants}>{children}</HydrateQueries>
      </main>
    </div>
  );
}
