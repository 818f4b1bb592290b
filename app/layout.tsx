import type { Metadata, Viewport } from 'next';
import { getServerSession } from 'next-auth';
import type { ReactNode } from 'react';
import { nextEntry } from '@/server/boot/next-entry';
import { Providers } from './providers';
import './globals.css';

export const metadata: Metadata = {
  title: { default: 'Better Compute', template: '%s · Better Compute' },
  description: 'The Better Compute control plane console',
  robots: { index: false, follow: false },
};

export const viewport: Viewport = { colorScheme: 'light' };

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Handing the session to SessionProvider spares the browser a /api/auth/session round trip on load.
  const session = await getServerSession(nextEntry().authOptions);
  return (
    <html lang="en">
      <body>
        <Providers session={session}>{children}</Providers>
      </body>
    </html>
  );
}
