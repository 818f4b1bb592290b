'use client';

import { useState, type ReactNode } from 'react';
import type { DataColumn } from './data-table';

/** Which rows of a table have their details open. */
function useOpenRows() {
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
function DetailsButton(props: { fields: number; isOpen: boolean; controls: string; none: string; onToggle: () => void }) {
  if (!props.fields) return <span className="muted">{props.none}</span>;
  return (
    <button type="button" className="btn btn-small" aria-expanded={props.isOpen} aria-controls={props.controls} onClick={props.onToggle}>
      {props.isOpen ? 'Hide details' : `Show details (${props.fields})`}
    </button>
  );
}

interface RowDetailsOptions {
  /** The details rows' ids start with it (`audit-details`). */
  idPrefix: string;
  /** The details rows' class. */
  className: string;
  /** What the Details column says for a row without data. */
  none: string;
}

/**
 * Rows whose data opens below them across the table's whole width: the Details column's toggle, and the
 * table's `afterRow`, which holds the open row's details (`content`).
 */
export function useRowDetails<T extends { id: string; data: Record<string, unknown> }>({ idPrefix, className, none }: RowDetailsOptions) {
  const { isOpen, toggle } = useOpenRows();
  const detailsId = (row: T) => `${idPrefix}-${row.id}`;
  const column: DataColumn<T> = {
    id: 'details',
    header: 'Details',
    className: 'cell-actions',
    cell: (row) => (
      <DetailsButton
        fields={Object.keys(row.data).length}
        isOpen={isOpen(row.id)}
        controls={detailsId(row)}
        none={none}
        onToggle={() => toggle(row.id)}
      />
    ),
  };
  const detailsRow = (row: T, columns: number, content: ReactNode) =>
    isOpen(row.id) && (
      <tr className={className} id={detailsId(row)}>
        <td colSpan={columns}>{content}</td>
      </tr>
    );
  return { column, detailsRow };
}
