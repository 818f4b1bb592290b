import Link from 'next/link';
import { redirect } from 'next/navigation';
import { Suspense, type ReactNode } from 'react';
import { ConsoleNav } from '@/components/console/console-nav';
import { SignOutButton } from '@/components/console/sign-out-button';
import { TenantSwitcher } from '@/components/console/tenant-switcher';
import { getSignedInOperator } from '@/lib/session';

/** Every console page needs a signed-in operator; the check runs on the server, before anything renders. */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const operator = await getSignedInOperator();
  if (!operator) redirect('/login');
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
          <TenantSwitcher />
        </Suspense>
        <div className="topbar-spacer" />
        <div className="operator" aria-label="Signed-in operator">
          <span className="operator-name">{operator.name ?? operator.email}</span>
          {operator.name && <span className="operator-email">{operator.email}</span>}
        </div>
        <SignOutButton />
      </header>
      <div className="shell-body">
        <Suspense>
          <ConsoleNav />
        </Suspense>
        <main id="main" className="content">
          {children}
        </main>
      </div>
    </div>
  );
}
