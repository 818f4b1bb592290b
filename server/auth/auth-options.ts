import type { NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { getDb } from '../db/client';
import { authenticateOperator } from '../operators/operators';

/**
 * Console sign-in: email and password against the operators table (scrypt hashes). Sessions are signed
 * JWT cookies under NEXTAUTH_SECRET, which the boot process keeps in the data directory, so they survive
 * a restart. Memberships are read fresh on every request, never from the cookie.
 */
export const authOptions: NextAuthOptions = {
  secret: process.env.NEXTAUTH_SECRET,
  session: { strategy: 'jwt', maxAge: 12 * 60 * 60 },
  pages: { signIn: '/login' },
  providers: [
    CredentialsProvider({
      name: 'Email and password',
      credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
      async authorize(credentials) {
        if (!credentials?.email || !credentials.password) return null;
        const operator = await authenticateOperator(getDb(), credentials.email, credentials.password);
        return operator ? { id: operator.id, email: operator.email, name: operator.name } : null;
      },
    }),
  ],
  callbacks: {
    jwt({ token, user }) {
      if (user) token.sub = user.id;
      return token;
    },
    session({ session, token }) {
      if (session.user && token.sub) (session.user as { id?: string }).id = token.sub;
      return session;
    },
  },
};
