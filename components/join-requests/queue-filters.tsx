'use client';

import { useEffect, useState } from 'react';
import { DEFERRING_ATTESTORS, type QueueFilterParams } from '@/lib/join-request-queue';

interface QueueFiltersProps {
  params: QueueFilterParams;
  onChange: (changes: Partial<QueueFilterParams>) => void;
  /** Parameters the page could not read, named so the operator sees why they do nothing. */
  ignored: string[];
}

/** How long typing pauses before the search goes to the server (and into the URL). */
const SEARCH_DELAY_MS = 250;

/**
 * The queue's search box and filters; every value lives in the URL, so a filtered queue can be shared. The
 * search is sent to the server (MAC, serial, product UUID, hostname, IP, request id), never run on the rows
 * already loaded, so it finds a request on any page.
 */
export function QueueFilters({ params, onChange, ignored }: QueueFiltersProps) {
  const [text, setText] = useState(params.q ?? '');
  useEffect(() => setText(params.q ?? ''), [params.q]);
  useEffect(() => {
    if (text === (params.q ?? '')) return;
    const timer = setTimeout(() => onChange({ q: text.trim() || null }), SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
    // onChange is a new function each render; the text alone decides.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [text]);

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
      <select aria-label="Attestor" value={params.attestor ?? ''} onChange={(event) => onChange({ attestor: event.target.value || null })}>
        <option value="">any attestor</option>
        {DEFERRING_ATTESTORS.map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
      <select
        aria-label="Hardware key"
        value={params.trusted ?? ''}
        onChange={(event) => onChange({ trusted: event.target.value || null })}
      >
        <option value="">any hardware key</option>
        <option value="yes">trusted key</option>
        <option value="no">untrusted or no key</option>
      </select>
      <select aria-label="Age" value={params.olderThan ?? ''} onChange={(event) => onChange({ olderThan: event.target.value || null })}>
        <option value="">any age</option>
        <option value="15m">waiting over 15 min</option>
        <option value="1h">waiting over 1 h</option>
        <option value="4h">waiting over 4 h</option>
      </select>
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
      {ignored.length > 0 && (
        <span className="form-error" role="status">
          Ignored {ignored.join(', ')}: not a value this filter takes.
        </span>
      )}
    </div>
  );
}
