import type { ReactNode } from 'react';
import { PageHeader } from './page-header';

/**
 * A console page whose API is not served yet. It says what the page will show and shows nothing else:
 * no sample rows, so nobody mistakes a mock-up for the state of their fleet.
 */
export function PlannedPage({ title, summary, children }: { title: string; summary: string; children: ReactNode }) {
  return (
    <>
      <PageHeader title={title} description={summary} />
      <section className="panel planned" aria-label={`${title}: not available yet`}>
        <p className="planned-badge">Not available in this version of the console</p>
        <div className="planned-body">{children}</div>
      </section>
    </>
  );
}
