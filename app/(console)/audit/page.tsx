import type { Metadata } from 'next';
import { AuditView } from '@/components/audit/audit-view';
import { readAudit } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Audit' };

export default function AuditPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readAudit} loading="Loading the audit log…">
      <AuditView />
    </PrefetchedPage>
  );
}
