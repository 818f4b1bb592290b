import type { Metadata } from 'next';
import { ApiKeysView } from '@/components/access/api-keys-view';

export const metadata: Metadata = { title: 'API keys' };

export default function ApiKeysPage() {
  return <ApiKeysView />;
}
