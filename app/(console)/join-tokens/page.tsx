import type { Metadata } from 'next';
import { JoinTokensView } from '@/components/join-tokens/join-tokens-view';

export const metadata: Metadata = { title: 'Join tokens' };

export default function JoinTokensPage() {
  return <JoinTokensView />;
}
