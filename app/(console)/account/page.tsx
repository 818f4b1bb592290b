import type { Metadata } from 'next';
import { redirect } from 'next/navigation';
import { AccountView } from '@/components/access/account-view';
import { getSignedInOperator } from '@/server/auth/session';
import { getDb } from '@/server/db/client';
import { hasOwnPassword } from '@/server/operators/account';

export const metadata: Metadata = { title: 'Account' };

export default async function AccountPage() {
  const operator = await getSignedInOperator();
  if (!operator) redirect('/login');
  return <AccountView email={operator.email} name={operator.name} hasPassword={await hasOwnPassword(getDb(), operator.id)} />;
}
