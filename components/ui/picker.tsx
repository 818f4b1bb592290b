'use client';

import { useId, type ReactNode } from 'react';

/** A labelled select in a page header's actions, choosing what the page shows (a pool, a site, a state). */
export function Picker({
  label,
  value,
  onChange,
  children,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  children: ReactNode;
}) {
  const id = useId();
  // A label for=, not a wrapping label: the select's name stays the label rather than taking in its chosen option.
  return (
    <div className="picker">
      <label htmlFor={id} className="picker-label">
        {label}
      </label>
      <select id={id} value={value} onChange={(event) => onChange(event.target.value)}>
        {children}
      </select>
    </div>
  );
}
