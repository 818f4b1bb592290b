import type { Metadata } from 'next';
import { OperatorsView } from '@/components/access/operators-view';
import { readOperators } from '../../page-readers';
import { PrefetchedPage, type SearchParams } from '../../prefetch';

export const metadata: Metadata = { title: 'Operators' };

export default function OperatorsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readOperators} loading="Loading operators…">
      <OperatorsView />
    </PrefetchedPage>
  );
}
