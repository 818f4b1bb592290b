export const TENANT_PARAM = 'tenant';

/** `path` with `?tenant=` carried over, so moving between console pages keeps the selected tenant. */
export function withTenant(path: string, tenant: string | null | undefined): string {
  if (!tenant) return path;
  return `${path}${path.includes('?') ? '&' : '?'}${TENANT_PARAM}=${encodeURIComponent(tenant)}`;
}
