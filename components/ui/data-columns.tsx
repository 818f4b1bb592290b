import type { ReactNode } from 'react';
import type { DataColumn } from './data-table';

/** The row's name, as its header cell (`<th scope="row" class="cell-name">`). */
export function nameColumn<T>(header: string, cell: (row: T) => ReactNode, id = 'name'): DataColumn<T> {
  return { id, header, rowHeader: true, className: 'cell-name', cell };
}

/** The row's buttons, last, under a header only screen readers read; they stay in view at the right edge. */
export function actionsColumn<T>(cell: (row: T) => ReactNode): DataColumn<T> {
  return { id: 'actions', header: 'Actions', hideHeader: true, className: 'cell-actions', cell };
}
