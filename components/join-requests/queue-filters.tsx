'use client';

import { FilterSelect, IgnoredParams, useDebouncedParam } from '@/components/ui/filters';
import { DEFERRING_ATTESTORS, type QueueFilterParams } from '@/lib/join-request-queue';

interface QueueFiltersProps {
  params: QueueFilterParams;
  onChange: (changes: Partial<QueueFilterParams>) => void;
  /** Parameters the page could not read, named so the operator sees why they do nothing. */
  ignored: string[];
}

/**
 * The queue's search box and filters; every value lives in the URL, so a filtered queue can be shared. The
 * search is sent to the server (MAC, serial, product UUID, hostname, IP, request id), never run on the rows
 * already loaded, so it finds a request on any page.
 */
export function QueueFilters({ params, onChange, ignored }: QueueFiltersProps) {
  const [text, setText] = useDebouncedParam(params.q, (q) => onChange({ q }));

  return (
    <div className="queue-filters" role="search" aria-label="Search and filter join requests">
      <input
        type="search"
        className="queue-search"
        aria-label="Search by MAC, serial, product UUID, hostname, IP or request id"
        placeholder="Search MAC, serial, UUID, hostname, IP, id"
        value={text}
        maxLength={200}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter') onChange({ q: text.trim() || null });
          if (event.key === 'Escape') (event.target as HTMLInputElement).blur();
        }}
      />
      <FilterSelect
        label="Attestor"
        value={params.attestor}
        any="any attestor"
        options={DEFERRING_ATTESTORS.map((name) => [name, name])}
        onChange={(attestor) => onChange({ attestor })}
      />
      <FilterSelect
        label="Hardware key"
        value={params.trusted}
        any="any hardware key"
        options={[
          ['yes', 'trusted key'],
          ['no', 'untrusted or no key'],
        ]}
        onChange={(trusted) => onChange({ trusted })}
      />
      <FilterSelect
        label="Age"
        value={params.olderThan}
        any="any age"
        options={[
          ['15m', 'waiting over 15 min'],
          ['1h', 'waiting over 1 h'],
          ['4h', 'waiting over 4 h'],
        ]}
        onChange={(olderThan) => onChange({ olderThan })}
      />
      <input
        type="text"
        className="queue-vouched"
        aria-label="Vouched by (exact identity)"
        placeholder="vouched by"
        defaultValue={params.vouchedBy ?? ''}
        key={params.vouchedBy ?? ''}
        maxLength={200}
        onKeyDown={(event) => {
          if (event.key === 'Enter') onChange({ vouchedBy: (event.target as HTMLInputElement).value.trim() || null });
        }}
        onBlur={(event) => onChange({ vouchedBy: event.target.value.trim() || null })}
      />
      <IgnoredParams ignored={ignored} />
    </div>
  );
}
