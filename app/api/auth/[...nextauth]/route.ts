import NextAuth from 'next-auth';
import { nextEntry } from '@/server/boot/next-entry';

const handler = NextAuth(nextEntry().authOptions);

export { handler as GET, handler as POST };
