import type { Metadata } from 'next';
import { RefusedJoinsView } from '@/components/refused-joins/refused-joins-view';

export const metadata: Metadata = { title: 'Refused joins' };

export default function RefusedJoinsPage() {
  return <RefusedJoinsView />;
}
