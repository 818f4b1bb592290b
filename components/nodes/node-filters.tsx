'use client';

import { FilterSelect, IgnoredParams, useDebouncedParam } from '@/components/ui/filters';
import { EXPIRING_CHOICES, type NodeListParams } from '@/lib/node-list-params';
import { NODE_STATES } from '@/protocol/api/node-schemas';

interface NodeFiltersProps {
  params: NodeListParams;
  onChange: (changes: Partial<NodeListParams>) => void;
  pools: Array<{ id: string; name: string }>;
  sites: Array<{ id: string; name: string }>;
  /** Parameters the page could not read, named so the operator sees why they do nothing. */
  ignored: string[];
}

/**
 * The nodes page's search box and filters; every value lives in the URL, so a filtered list can be shared. The
 * search runs on the server (hostname, serial, product UUID, MAC with any separators, node id, IP, label value),
 * never on the rows already loaded, so it finds a node on any page.
 */
export function NodeFilters({ params, onChange, pools, sites, ignored }: NodeFiltersProps) {
  const [search, setSearch] = useDebouncedParam(params.q, (q) => onChange({ q }));
  const [label, setLabel] = useDebouncedParam(params.label, (value) => onChange({ label: value?.replace(/\s+/g, '') || null }));
  const select = (name: keyof NodeListParams, label: string, options: Array<[string, string]>, any: string) => (
    <FilterSelect label={label} value={params[name]} any={any} options={options} onChange={(value) => onChange({ [name]: value })} />
  );
  return (
    <div className="queue-filters node-filters" role="search" aria-label="Search and filter nodes">
      <input
        type="search"
        className="queue-search"
        aria-label="Search by hostname, serial, product UUID, MAC, node id, IP or label value"
        placeholder="Search hostname, serial, UUID, MAC, IP, id, label"
        value={search}
        maxLength={200}
        onChange={(event) => setSearch(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter') onChange({ q: search.trim() || null });
        }}
      />
      <input
        type="text"
        className="queue-vouched"
        aria-label="Labels (key=value, comma-separated; all must match)"
        placeholder="label key=value"
        value={label}
        maxLength={400}
        onChange={(event) => setLabel(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter') onChange({ label: label.replace(/\s+/g, '') || null });
        }}
      />
      {select(
        'pool',
        'Pool',
        pools.map((p) => [p.id, p.name]),
        'all pools',
      )}
      {sites.length > 1 &&
        select(
          'site',
          'Site',
          sites.map((s) => [s.id, s.name]),
          'all sites',
        )}
      {select(
        'state',
        'State',
        NODE_STATES.map((s) => [s, s]),
        'any state',
      )}
      {select(
        'connected',
        'Session',
        [
          ['true', 'connected'],
          ['false', 'disconnected'],
        ],
        'connected or not',
      )}
      {select(
        'key',
        'Node key',
        [
          ['trusted', 'trusted hardware key'],
          ['unattested', 'unattested hardware key'],
          ['none', 'no hardware key'],
        ],
        'any node key',
      )}
      {select(
        'expiring',
        'Certificate expiring within',
        Object.keys(EXPIRING_CHOICES).map((k) => [k, `certificate ends within ${k}`]),
        'any certificate end',
      )}
      <IgnoredParams ignored={ignored} />
    </div>
  );
}
