import type { Metadata } from 'next';
import { redirect } from 'next/navigation';
import { AccountView } from '@/components/access/account-view';
import { nextEntry } from '@/server/boot/next-entry';
import { hasOwnPassword } from '@/server/operators/account';

export const metadata: Metadata = { title: 'Account' };

export default async function AccountPage() {
  const operator = await nextEntry().signedInOperator();
  if (!operator) redirect('/login');
  return (
    <AccountView email={operator.email} name={operator.name} hasPassword={await hasOwnPassword(nextEntry().services().db, operator.id)} />
  );
}
