'use client';

import { Fragment, type ComponentPropsWithoutRef, type ReactNode } from 'react';
import { HeaderCell, RowBox, SelectAll, cellClass, cellStyle, type DataSelection, type DataSort } from './data-table-parts';
import { QueryStates } from './query-state';
import { TableScroll } from './table-scroll';
import './data-table.css';

/** One column of a {@link DataTable}: its header, what a row shows in it, and how wide it may be. */
export interface DataColumn<T> {
  /** Unique among the table's columns; also the key handed to `onSortChange`. */
  id: string;
  /** The header text; the column's name in cards at phone width. */
  header: string;
  /** The column's name in cards (`data-label`) when it differs from the header; '' for none. */
  label?: string;
  /** The header is for screen readers only (an actions column). */
  hideHeader?: boolean;
  cell: (row: T) => ReactNode;
  /** The row's header cell (`<th scope="row">`): the name that identifies the row. */
  rowHeader?: boolean;
  /** Classes of the cell (`cell-actions`, `cell-time`, `cell-wrap`, …), or of this row's cell. */
  className?: string | ((row: T) => string | undefined);
  /** The whole value, shown on hover: always set it on a `truncate` column so nothing cut is lost. */
  title?: (row: T) => string | null | undefined;
  /** Cut the value to one line with an ellipsis at `maxWidth` instead of widening the table. */
  truncate?: boolean;
  /** Widths (CSS lengths). `minWidth` keeps a cell from being crushed; the table scrolls instead. */
  width?: string;
  minWidth?: string;
  maxWidth?: string;
  /** More attributes of the header cell (a `title` that explains the column, `aria-describedby`). */
  headerProps?: ComponentPropsWithoutRef<'th'>;
  /** The column sorts when its header is pressed (only with `sort` on the table). */
  sortable?: boolean;
  /** More attributes of a row's cell in this column (`data-testid`). */
  cellProps?: (row: T) => Record<`data-${string}`, string | undefined>;
}

interface DataTableProps<T> {
  rows: T[];
  columns: DataColumn<T>[];
  rowKey: (row: T) => string;
  /** The name of the scroll region ("Sites table"). */
  label: string;
  /** The table's caption, visually hidden unless `showCaption` (a note such as "the newest 50 of 80"). */
  caption?: ReactNode;
  showCaption?: boolean;
  className?: string;
  rowClassName?: (row: T) => string | undefined;
  /** More attributes of a row's `<tr>` (`id`, `aria-selected`, `data-…`). */
  rowProps?: (row: T) => ComponentPropsWithoutRef<'tr'> & Record<`data-${string}`, string | undefined>;
  /** Rows of an older query shown while the next one loads (dimmed). */
  stale?: boolean;
  /** Controlled: the page keeps the order (and asks the server for it where the server sorts). */
  sort?: DataSort;
  onSortChange?: (sort: DataSort) => void;
  selection?: DataSelection<T>;
  /** At phone width each row becomes a card of label: value lines instead of a scrolling row. */
  cards?: boolean;
  /** Rendered after a row's `<tr>` (a details row across the table, `colSpan` = the column count). */
  afterRow?: (row: T) => ReactNode;
  /** Render without the scroll region (the caller already has one). */
  bare?: boolean;
}

/**
 * The console's table: typed columns, a cell that is cut keeps its whole value in `title`, optional sorting
 * (controlled by the page) and a checkbox column for selection, in the labelled scroll region that lets a wide
 * table scroll instead of crushing its cells. With `cards`, rows become cards at phone width.
 */
export function DataTable<T>(props: DataTableProps<T>) {
  const { rows, columns, rowKey, label, caption, className, rowClassName, rowProps, stale, sort, onSortChange, selection } = props;
  const ids = rows.map(rowKey);
  const classes = ['table', props.cards ? 'data-table-cards' : undefined, className].filter(Boolean).join(' ');
  const table = (
    <table className={classes}>
      {caption && <caption className={props.showCaption ? 'muted' : 'visually-hidden'}>{caption}</caption>}
      <thead>
        <tr>
          {selection && (
            <th scope="col" className="cell-select">
              <SelectAll ids={ids} selection={selection} />
            </th>
          )}
          {columns.map((column) => (
            <HeaderCell key={column.id} column={column} sort={sort} onSortChange={onSortChange} />
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, index) => {
          const id = ids[index]!;
          return (
            <Fragment key={id}>
              <tr className={rowClassName?.(row)} {...rowProps?.(row)}>
                {selection && (
                  <td className="cell-select">
                    <RowBox row={row} id={id} selection={selection} />
                  </td>
                )}
                {columns.map((column) => {
                  const Cell = column.rowHeader ? 'th' : 'td';
                  return (
                    <Cell
                      key={column.id}
                      scope={column.rowHeader ? 'row' : undefined}
                      className={cellClass(column, row)}
                      style={cellStyle(column)}
                      title={column.title?.(row) ?? undefined}
                      data-label={column.hideHeader ? undefined : (column.label ?? column.header) || undefined}
                      {...column.cellProps?.(row)}
                    >
                      {column.cell(row)}
                    </Cell>
                  );
                })}
              </tr>
              {props.afterRow?.(row)}
            </Fragment>
          );
        })}
      </tbody>
    </table>
  );
  if (props.bare) return table;
  return (
    <TableScroll label={label} stale={stale}>
      {table}
    </TableScroll>
  );
}

interface ListQuery {
  isPending: boolean;
  isError: boolean;
  error: unknown;
  refetch: () => Promise<unknown>;
}

/**
 * A list page's table with its states: loading, an error with Retry, the empty callout, else the table (in a
 * panel named `panel` when given).
 */
export function DataList<T>({
  query,
  rows = query.data?.items ?? [],
  loading,
  what,
  empty,
  panel,
  footer,
  ...table
}: Omit<DataTableProps<T>, 'rows'> & {
  /** The list's query; its page's `items` are the rows unless `rows` says otherwise. */
  query: ListQuery & { data?: { items: T[] } };
  rows?: T[];
  loading: string;
  what: string;
  empty: ReactNode;
  /** Wrap the table in a panel of this name. */
  panel?: string;
  /** Shown under the table, in its panel. */
  footer?: ReactNode;
}) {
  return (
    <QueryStates query={query} items={rows} loading={loading} what={what} empty={empty}>
      {() =>
        panel ? (
          <section className="panel" aria-label={panel}>
            <DataTable {...table} rows={rows} />
            {footer}
          </section>
        ) : (
          <DataTable {...table} rows={rows} />
        )
      }
    </QueryStates>
  );
}
