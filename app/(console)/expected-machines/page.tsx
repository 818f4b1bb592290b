import type { Metadata } from 'next';
import { ExpectedMachinesView } from '@/components/expected-machines/expected-machines-view';
import { readExpectedMachines } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Expected machines' };

export default function ExpectedMachinesPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readExpectedMachines} loading="Loading expected machines…">
      <ExpectedMachinesView />
    </PrefetchedPage>
  );
}
