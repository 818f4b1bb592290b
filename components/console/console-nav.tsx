'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { usePathname, useSearchParams } from 'next/navigation';
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { TENANT_PARAM, withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { useHydrated } from '@/lib/use-now';

const SECTIONS = [
  {
    heading: 'Capacity',
    items: [
      { href: '/', label: 'Overview' },
      { href: '/pools', label: 'Pools' },
      { href: '/sites', label: 'Sites' },
    ],
  },
  {
    heading: 'Joining',
    items: [
      { href: '/join-tokens', label: 'Join tokens' },
      { href: '/join-requests', label: 'Join requests' },
      { href: '/approval-rules', label: 'Approval rules' },
      { href: '/expected-machines', label: 'Expected machines' },
      { href: '/nodes', label: 'Nodes' },
      { href: '/refused-joins', label: 'Refused joins' },
    ],
  },
  {
    heading: 'Activity',
    items: [
      { href: '/events', label: 'Events' },
      { href: '/audit', label: 'Audit' },
    ],
  },
  {
    heading: 'Access',
    items: [
      { href: '/access/operators', label: 'Operators' },
      { href: '/access/api-keys', label: 'API keys' },
      { href: '/webhooks', label: 'Webhooks' },
      // Only for root admins: the one page outside a tenant.
      { href: '/access/tenants', label: 'Tenants', rootOnly: true },
      { href: '/pki', label: 'PKI', rootOnly: true },
    ],
  },
];

/**
 * The console's navigation. On a phone (CSS, max-width 720px) the sections fold behind a Menu button, a
 * disclosure: Escape closes it and puts focus back on the button, and following a link closes it.
 */
export function ConsoleNav() {
  const pathname = usePathname();
  const tenant = useSearchParams().get(TENANT_PARAM);
  const trpc = useTRPC();
  const tenants = useQuery(trpc.tenants.list.queryOptions({}, { staleTime: 60_000 }));
  // Once hydrated, as the tenant switcher: the server renders the shell before any page has the tenants.
  const isHydrated = useHydrated();
  const isRootAdmin = isHydrated && (tenants.data?.items.some((t) => t.isRoot && t.role === 'admin') ?? false);
  const [isOpen, setOpen] = useState(false);
  const toggle = useRef<HTMLButtonElement>(null);
  // A new page closes the menu (the link was followed).
  useEffect(() => setOpen(false), [pathname]);

  function onKeyDown(event: KeyboardEvent<HTMLElement>) {
    if (event.key !== 'Escape' || !isOpen) return;
    event.stopPropagation();
    setOpen(false);
    toggle.current?.focus();
  }

  return (
    <nav className="sidenav" aria-label="Console" data-open={isOpen ? 'true' : undefined} onKeyDown={onKeyDown}>
      <button
        ref={toggle}
        type="button"
        className="sidenav-toggle"
        aria-expanded={isOpen}
        aria-controls="console-nav-sections"
        onClick={() => setOpen((open) => !open)}
      >
        <span className="sidenav-toggle-icon" aria-hidden="true" />
        Menu
      </button>
      <div id="console-nav-sections" className="sidenav-sections">
        {SECTIONS.map((section) => (
          <div key={section.heading} className="sidenav-section">
            <p className="sidenav-heading">{section.heading}</p>
            <ul>
              {section.items
                .filter((item) => !('rootOnly' in item) || isRootAdmin)
                .map((item) => {
                  const isActive = pathname === item.href || (item.href !== '/' && pathname.startsWith(`${item.href}/`));
                  return (
                    <li key={item.href}>
                      <Link
                        href={withTenant(item.href, tenant)}
                        aria-current={isActive ? 'page' : undefined}
                        className="sidenav-link"
                        onClick={() => setOpen(false)}
                      >
                        {item.label}
                      </Link>
                    </li>
                  );
                })}
            </ul>
          </div>
        ))}
      </div>
    </nav>
  );
}
