import type { Metadata } from 'next';
import { ExpectedMachinesView } from '@/components/expected-machines/expected-machines-view';

export const metadata: Metadata = { title: 'Expected machines' };

export default function ExpectedMachinesPage() {
  return <ExpectedMachinesView />;
}
