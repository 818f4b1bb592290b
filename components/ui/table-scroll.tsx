import type { ReactNode } from 'react';

/**
 * The horizontal scroll box around a wide table. It is a labelled region that takes focus, so a keyboard
 * user can scroll it with the arrow keys when the table is wider than the screen (axe's
 * scrollable-region-focusable), and a screen reader names what it holds.
 */
export function TableScroll({ label, stale, children }: { label: string; stale?: boolean; children: ReactNode }) {
  return (
    <div className={`table-scroll${stale ? ' is-stale' : ''}`} role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}
