'use client';

import { useState, type ReactNode } from 'react';

/** Which rows of a table have their details open. */
export function useOpenRows() {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  return { isOpen: (id: string) => open.has(id), toggle };
}

/** "Show details (3)" / "Hide details" for a row whose data has `fields` entries; `none` when it has none. */
export function DetailsButton(props: { fields: number; isOpen: boolean; controls: string; none: string; onToggle: () => void }) {
  if (!props.fields) return <span className="muted">{props.none}</span>;
  return (
    <button type="button" className="btn btn-small" aria-expanded={props.isOpen} aria-controls={props.controls} onClick={props.onToggle}>
      {props.isOpen ? 'Hide details' : `Show details (${props.fields})`}
    </button>
  );
}

/** The row under a table row that holds its details across the table's whole width. */
export function DetailsRow({ id, className, columns, children }: { id: string; className: string; columns: number; children: ReactNode }) {
  return (
    <tr className={className} id={id}>
      <td colSpan={columns}>{children}</td>
    </tr>
  );
}
