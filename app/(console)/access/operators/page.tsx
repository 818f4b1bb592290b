import type { Metadata } from 'next';
import { OperatorsView } from '@/components/access/operators-view';

export const metadata: Metadata = { title: 'Operators' };

export default function OperatorsPage() {
  return <OperatorsView />;
}
