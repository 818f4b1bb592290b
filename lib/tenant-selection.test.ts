import { describe, expect, it } from 'vitest';
import type { Tenant } from './api-types';
import { selectTenant } from './tenant-selection';

const tenant = (id: string, name: string, isMember = true) => ({ id, name, isMember }) as Tenant;

describe('selectTenant', () => {
  const listed = [tenant('tnt_outside', 'outside', false), tenant('tnt_a', 'alpha'), tenant('tnt_b', 'beta')];
  it('chooses the first tenant the operator is a member of, or ?tenant= by id or name', () => {
    expect(selectTenant(listed, null)).toMatchObject({ status: 'ready', tenant: { id: 'tnt_a' } });
    expect(selectTenant(listed, 'tnt_b')).toMatchObject({ status: 'ready', tenant: { id: 'tnt_b' } });
    expect(selectTenant(listed, 'beta')).toMatchObject({ status: 'ready', tenant: { id: 'tnt_b' } });
    expect((selectTenant(listed, null) as { tenants: Tenant[] }).tenants.map((t) => t.id)).toEqual(['tnt_a', 'tnt_b']);
  });
  it('reports a tenant the operator is not a member of as unknown, and no membership as none', () => {
    expect(selectTenant(listed, 'tnt_outside')).toEqual({ status: 'unknown', requested: 'tnt_outside' });
    expect(selectTenant(listed, 'nope')).toEqual({ status: 'unknown', requested: 'nope' });
    expect(selectTenant([tenant('tnt_outside', 'outside', false)], null)).toEqual({ status: 'none' });
  });
});
