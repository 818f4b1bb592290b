import { describe, expect, it } from 'vitest';
import { nodeExportHref, nodeListFilterOf } from './node-list-params';

const none = {
  q: null,
  pool: null,
  site: null,
  state: null,
  connected: null,
  role: null,
  attestor: null,
  key: null,
  expiring: null,
  label: null,
};

describe('the nodes page URL', () => {
  it('reads every filter from its parameter, and names the ones it cannot read', () => {
    expect(
      nodeListFilterOf({
        ...none,
        q: ' 3c-ec-ef ',
        pool: 'pool_01abc',
        state: 'adopted',
        connected: 'false',
        key: 'trusted',
        expiring: '7d',
        label: 'rack=c7,env=prod',
      }),
    ).toEqual({
      filter: {
        search: '3c-ec-ef',
        poolId: 'pool_01abc',
        state: 'adopted',
        connected: false,
        nodeKey: 'trusted',
        expiringWithinSeconds: 7 * 86_400,
        labels: ['rack=c7', 'env=prod'],
      },
      ignored: [],
    });
    expect(nodeListFilterOf({ ...none, state: 'gone', connected: 'maybe', label: 'rack', expiring: '2y', pool: 'x' })).toEqual({
      filter: {},
      ignored: ['pool', 'state', 'connected', 'expiring', 'label'],
    });
  });

  it('links the export to the same filter, lists as repeated parameters', () => {
    expect(nodeExportHref('tnt_1', { search: 'a b', labels: ['rack=c7', 'env=prod'], connected: true })).toBe(
      '/api/compute/v1/tenants/tnt_1/nodes/export.csv?search=a+b&labels=rack%3Dc7&labels=env%3Dprod&connected=true',
    );
    expect(nodeExportHref('tnt_1', {})).toBe('/api/compute/v1/tenants/tnt_1/nodes/export.csv');
  });
});
