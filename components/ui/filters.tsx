'use client';

import { useEffect, useState } from 'react';

/** How long typing pauses before a search goes to the server (and into the URL). */
const SEARCH_DELAY_MS = 250;

/** A text box whose value goes into the URL after typing pauses, or at once on Enter (the caller's). */
export function useDebouncedParam(value: string | null, commit: (value: string | null) => void) {
  const [text, setText] = useState(value ?? '');
  useEffect(() => setText(value ?? ''), [value]);
  useEffect(() => {
    if (text === (value ?? '')) return;
    const timer = setTimeout(() => commit(text.trim() || null), SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
    // commit is a new function each render; the text alone decides.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [text]);
  return [text, setText] as const;
}

interface FilterSelectProps {
  /** The select's accessible name. */
  label: string;
  value: string | null;
  /** The first option, which filters nothing ("any state"). */
  any: string;
  /** Each choice as [value, text]. */
  options: ReadonlyArray<readonly [string, string]>;
  /** The chosen value; null for `any`. */
  onChange: (value: string | null) => void;
}

/** One filter of a list's filter bar: a select whose first option filters nothing. */
export function FilterSelect({ label, value, any, options, onChange }: FilterSelectProps) {
  return (
    <select aria-label={label} value={value ?? ''} onChange={(event) => onChange(event.target.value || null)}>
      <option value="">{any}</option>
      {options.map(([choice, text]) => (
        <option key={choice} value={choice}>
          {text}
        </option>
      ))}
    </select>
  );
}

/** Names the URL parameters the page could not read, so the operator sees why they do nothing. */
export function IgnoredParams({ ignored }: { ignored: string[] }) {
  if (!ignored.length) return null;
  return (
    <span className="form-error" role="status">
      Ignored {ignored.join(', ')}: not a value this filter takes.
    </span>
  );
}
