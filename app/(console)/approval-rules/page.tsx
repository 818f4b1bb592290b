import type { Metadata } from 'next';
import { ApprovalRulesView } from '@/components/approval-rules/approval-rules-view';
import { readApprovalRules } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Approval rules' };

export default function ApprovalRulesPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readApprovalRules} loading="Loading approval rules…">
      <ApprovalRulesView />
    </PrefetchedPage>
  );
}
