import { redirect } from 'next/navigation';
import { TENANT_PARAM, withTenant } from '@/lib/tenant-url';

/** The console opens on Pools, keeping the tenant of the link that led here. */
export default async function ConsoleHome({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const tenant = (await searchParams)[TENANT_PARAM];
  redirect(withTenant('/pools', typeof tenant === 'string' ? tenant : null));
}
