'use client';

import { useEffect, useRef, type CSSProperties } from 'react';
import type { DataColumn } from './data-table';

export interface DataSort {
  column: string;
  direction: 'asc' | 'desc';
}

export interface DataSelection<T> {
  /** Ids of the ticked rows. */
  selected: ReadonlySet<string>;
  onChange: (next: Set<string>) => void;
  /** The accessible name of a row's box, "Select node_…". */
  rowLabel: (row: T) => string;
  /** The accessible name of the header box that ticks every row on the page. */
  allLabel: string;
  /** Replaces the plain toggle of a row's box, told whether Shift was held (a range, as the join queue selects). */
  onToggle?: (row: T, shiftKey: boolean) => void;
}

export function cellStyle<T>(column: DataColumn<T>): CSSProperties | undefined {
  const { width, minWidth, maxWidth } = column;
  if (!width && !minWidth && !maxWidth) return undefined;
  return { width, minWidth, maxWidth };
}

export function cellClass<T>(column: DataColumn<T>, row: T): string | undefined {
  const own = typeof column.className === 'function' ? column.className(row) : column.className;
  const names = [own, column.truncate ? 'cell-truncate' : undefined].filter(Boolean);
  return names.length ? names.join(' ') : undefined;
}

export function SelectAll<T>({ ids, selection }: { ids: string[]; selection: DataSelection<T> }) {
  const ref = useRef<HTMLInputElement>(null);
  const ticked = ids.filter((id) => selection.selected.has(id)).length;
  const all = ids.length > 0 && ticked === ids.length;
  useEffect(() => {
    if (ref.current) ref.current.indeterminate = ticked > 0 && !all;
  }, [ticked, all]);
  return (
    <input
      ref={ref}
      type="checkbox"
      aria-label={selection.allLabel}
      checked={all}
      onChange={() => {
        const next = new Set(selection.selected);
        for (const id of ids) {
          if (all) next.delete(id);
          else next.add(id);
        }
        selection.onChange(next);
      }}
    />
  );
}

export function RowBox<T>({ row, id, selection }: { row: T; id: string; selection: DataSelection<T> }) {
  const { onToggle } = selection;
  return (
    <input
      type="checkbox"
      aria-label={selection.rowLabel(row)}
      checked={selection.selected.has(id)}
      // Shift is read from the click; onChange alone does not say whether it was held.
      onClick={onToggle ? (event) => onToggle(row, event.shiftKey) : undefined}
      onChange={() => {
        if (onToggle) return;
        const next = new Set(selection.selected);
        if (!next.delete(id)) next.add(id);
        selection.onChange(next);
      }}
    />
  );
}

export function HeaderCell<T>({
  column,
  sort,
  onSortChange,
}: {
  column: DataColumn<T>;
  sort?: DataSort;
  onSortChange?: (sort: DataSort) => void;
}) {
  if (column.hideHeader) {
    return (
      <th scope="col" style={cellStyle(column)}>
        <span className="visually-hidden">{column.header}</span>
      </th>
    );
  }
  if (!column.sortable || !sort || !onSortChange) {
    return (
      <th scope="col" style={cellStyle(column)} {...column.headerProps}>
        {column.header}
      </th>
    );
  }
  const isSorted = sort.column === column.id;
  const next: DataSort = { column: column.id, direction: isSorted && sort.direction === 'asc' ? 'desc' : 'asc' };
  return (
    <th
      scope="col"
      style={cellStyle(column)}
      {...column.headerProps}
      aria-sort={isSorted ? (sort.direction === 'asc' ? 'ascending' : 'descending') : 'none'}
    >
      <button type="button" className="sort-button" onClick={() => onSortChange(next)}>
        {column.header}
        <span aria-hidden="true">{isSorted ? (sort.direction === 'asc' ? ' ▲' : ' ▼') : ''}</span>
      </button>
    </th>
  );
}
