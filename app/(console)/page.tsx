import type { Metadata } from 'next';
import { OverviewView } from '@/components/overview/overview-view';

export const metadata: Metadata = { title: 'Overview' };

/** The console's landing page: the tenant's overview (the tenant comes from `?tenant=`, as on every page). */
export default function ConsoleHome() {
  return <OverviewView />;
}
