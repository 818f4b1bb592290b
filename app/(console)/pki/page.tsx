import type { Metadata } from 'next';
import { PkiView } from '@/components/pki/pki-view';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'PKI' };

/** The keys every joined machine trusts and their rotation, for root admins. */
export default function PkiPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} loading="Loading the PKI…">
      <PkiView />
    </PrefetchedPage>
  );
}
