// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DataList, DataTable, type DataColumn } from './data-table';

afterEach(cleanup);

interface Site {
  id: string;
  name: string;
  note: string;
}

const rows: Site[] = [
  { id: 'site_a', name: 'east', note: 'a very long note that the table cuts to one line but keeps whole on hover' },
  { id: 'site_b', name: 'west', note: 'short' },
];

const columns: DataColumn<Site>[] = [
  { id: 'name', header: 'Site', rowHeader: true, className: 'cell-name', cell: (site) => site.name, sortable: true },
  { id: 'note', header: 'Note', truncate: true, minWidth: '12ch', title: (site) => site.note, cell: (site) => site.note },
  {
    id: 'actions',
    header: 'Actions',
    hideHeader: true,
    className: 'cell-actions',
    cell: (site) => <button type="button">Edit {site.name}</button>,
  },
];

const table = () => screen.getByRole('table');

describe('DataTable', () => {
  it('renders a header per column and a row per item, the row header as a th, in a labelled scroll region', () => {
    render(<DataTable rows={rows} columns={columns} rowKey={(site) => site.id} label="Sites table" />);
    expect(screen.getByRole('region', { name: 'Sites table' }).contains(table())).toBe(true);
    const headers = within(table())
      .getAllByRole('columnheader')
      .map((th) => th.textContent);
    expect(headers).toEqual(['Site', 'Note', 'Actions']);
    expect(within(table()).getAllByRole('columnheader')[2]!.querySelector('.visually-hidden')).not.toBeNull();
    expect(
      within(table())
        .getAllByRole('rowheader')
        .map((th) => th.textContent),
    ).toEqual(['east', 'west']);
    expect(screen.getByRole('button', { name: 'Edit west' }).closest('td')?.className).toBe('cell-actions');
  });

  it('cuts a truncated cell but keeps the whole value in its title, with a minimum width', () => {
    render(<DataTable rows={rows} columns={columns} rowKey={(site) => site.id} label="Sites table" />);
    const cell = screen.getByText(rows[0]!.note);
    expect(cell.className).toContain('cell-truncate');
    expect(cell.getAttribute('title')).toBe(rows[0]!.note);
    expect(cell.style.minWidth).toBe('12ch');
    expect(cell.getAttribute('data-label')).toBe('Note');
  });

  it('sorts through the page: the header calls back with the next order and shows the current one', () => {
    const onSortChange = vi.fn();
    const { rerender } = render(
      <DataTable
        rows={rows}
        columns={columns}
        rowKey={(site) => site.id}
        label="t"
        sort={{ column: 'note', direction: 'asc' }}
        onSortChange={onSortChange}
      />,
    );
    const header = screen.getByRole('columnheader', { name: 'Site' });
    expect(header.getAttribute('aria-sort')).toBe('none');
    fireEvent.click(within(header).getByRole('button'));
    expect(onSortChange).toHaveBeenLastCalledWith({ column: 'name', direction: 'asc' });
    rerender(
      <DataTable
        rows={rows}
        columns={columns}
        rowKey={(site) => site.id}
        label="t"
        sort={{ column: 'name', direction: 'asc' }}
        onSortChange={onSortChange}
      />,
    );
    expect(screen.getByRole('columnheader', { name: /Site/ }).getAttribute('aria-sort')).toBe('ascending');
    fireEvent.click(within(screen.getByRole('columnheader', { name: /Site/ })).getByRole('button'));
    expect(onSortChange).toHaveBeenLastCalledWith({ column: 'name', direction: 'desc' });
    // A column that is not sortable has no button.
    expect(within(screen.getByRole('columnheader', { name: 'Note' })).queryByRole('button')).toBeNull();
  });

  it('selects a row and every row on the page through a checkbox column', () => {
    const onChange = vi.fn();
    const selection = {
      selected: new Set<string>(['site_b']),
      onChange,
      rowLabel: (site: Site) => `Select ${site.id}`,
      allLabel: 'Select every site',
    };
    render(<DataTable rows={rows} columns={columns} rowKey={(site) => site.id} label="t" selection={selection} />);
    const all = screen.getByRole('checkbox', { name: 'Select every site' }) as HTMLInputElement;
    expect(all.checked).toBe(false);
    expect(all.indeterminate).toBe(true);
    expect((screen.getByRole('checkbox', { name: 'Select site_b' }) as HTMLInputElement).checked).toBe(true);
    fireEvent.click(screen.getByRole('checkbox', { name: 'Select site_a' }));
    expect([...onChange.mock.lastCall![0]].sort()).toEqual(['site_a', 'site_b']);
    fireEvent.click(all);
    expect([...onChange.mock.lastCall![0]].sort()).toEqual(['site_a', 'site_b']);
    fireEvent.click(screen.getByRole('checkbox', { name: 'Select site_b' }));
    expect([...onChange.mock.lastCall![0]]).toEqual([]);
  });

  it('clears the page when every row is ticked', () => {
    const onChange = vi.fn();
    const selection = { selected: new Set(['site_a', 'site_b', 'other']), onChange, rowLabel: () => 'Select', allLabel: 'All' };
    render(<DataTable rows={rows} columns={columns} rowKey={(site) => site.id} label="t" selection={selection} />);
    fireEvent.click(screen.getByRole('checkbox', { name: 'All' }));
    expect([...onChange.mock.lastCall![0]]).toEqual(['other']);
  });
});

describe('DataTable layout', () => {
  it('becomes cards at phone width only when asked, each cell labelled by its column', () => {
    const { rerender } = render(<DataTable rows={rows} columns={columns} rowKey={(site) => site.id} label="t" />);
    expect(table().classList.contains('data-table-cards')).toBe(false);
    rerender(<DataTable rows={rows} columns={columns} rowKey={(site) => site.id} label="t" cards />);
    expect(table().classList.contains('data-table-cards')).toBe(true);
    expect(screen.getByText('short').getAttribute('data-label')).toBe('Note');
  });

  it('renders what afterRow gives under its row', () => {
    render(
      <DataTable
        rows={rows}
        columns={columns}
        rowKey={(site) => site.id}
        label="t"
        afterRow={(site) =>
          site.id === 'site_a' && (
            <tr id="details-a">
              <td colSpan={3}>details of east</td>
            </tr>
          )
        }
      />,
    );
    const bodyRows = within(table()).getAllByRole('row').slice(1);
    expect(bodyRows.map((row) => row.id || row.textContent)).toEqual([
      expect.stringContaining('east'),
      'details-a',
      expect.stringContaining('west'),
    ]);
  });
});

describe('DataList', () => {
  const base = { columns, rowKey: (site: Site) => site.id, label: 't', loading: 'Loading sites…', what: 'sites', empty: 'No sites yet.' };
  const query = (state: Partial<{ isPending: boolean; isError: boolean; error: unknown }>, refetch = vi.fn(async () => {})) => ({
    isPending: false,
    isError: false,
    error: null,
    refetch,
    ...state,
  });

  it('says it is loading', () => {
    render(<DataList {...base} rows={[]} query={query({ isPending: true })} />);
    expect(screen.getByRole('status').textContent).toBe('Loading sites…');
    expect(screen.queryByRole('table')).toBeNull();
  });

  it('shows the error with a Retry that runs the query again', () => {
    const refetch = vi.fn(async () => {});
    render(<DataList {...base} rows={[]} query={query({ isError: true, error: new Error('boom') }, refetch)} />);
    expect(screen.getByRole('alert').textContent).toContain('Could not load sites.');
    fireEvent.click(screen.getByRole('button', { name: 'Retry' }));
    expect(refetch).toHaveBeenCalledOnce();
  });

  it('shows the empty callout, and the table in its panel when there are rows', () => {
    const { rerender } = render(<DataList {...base} rows={[]} query={query({})} />);
    expect(screen.getByText('No sites yet.')).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
    rerender(<DataList {...base} rows={rows} panel="Sites" query={query({})} />);
    expect(screen.getByRole('region', { name: 'Sites' }).contains(table())).toBe(true);
  });

  it("takes its rows from the query's page when none are given", () => {
    render(<DataList {...base} query={{ ...query({}), data: { items: rows } }} />);
    expect(within(table()).getAllByRole('row')).toHaveLength(rows.length + 1);
  });
});
