// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NOW, pool, request, tenant } from './queue-fixtures';
import { RequestQueue } from './request-queue';

const client = vi.hoisted(() => ({
  joinRequests: {
    approveMany: { mutate: vi.fn() },
    rejectMany: { mutate: vi.fn() },
    get: { query: vi.fn() },
  },
}));
vi.mock('@/lib/trpc', () => ({ useTRPCClient: () => client }));

afterEach(cleanup);
beforeEach(() => vi.resetAllMocks());

const rows = [request('jreq_0001', {}, 1), request('jreq_0002', {}, 2), request('jreq_0003', {}, 3)];

function Queue({ canDecide = true, onDecided = () => {} }: { canDecide?: boolean; onDecided?: () => void }) {
  const [notices, setNotices] = useState<string[]>([]);
  return (
    <RequestQueue
      rows={rows}
      initialRequest={null}
      now={NOW}
      pool={pool}
      sitePools={[pool]}
      tenant={tenant}
      canDecide={canDecide}
      onDecided={onDecided}
      notices={notices}
      onNotices={setNotices}
      matching={{ filter: {}, total: 5, asOf: '2026-01-01T12:00:00.000Z', isFiltered: false }}
    />
  );
}

const box = (name: string) => screen.getByRole('checkbox', { name }) as HTMLInputElement;
const dialog = (name: string) => screen.getByRole('dialog', { name, hidden: true });
const selection = () => screen.getByTestId('queue-selection').textContent;

describe('RequestQueue', () => {
  it('lists a row per request in the data table, the first current, with its detail beside', () => {
    render(<Queue />);
    const table = screen.getByRole('table');
    expect(
      within(table)
        .getAllByRole('rowheader')
        .map((th) => th.querySelector('button')?.getAttribute('aria-label')),
    ).toEqual(['jreq_0001', 'jreq_0002', 'jreq_0003']);
    expect(document.getElementById('request-row-jreq_0001')?.getAttribute('data-state')).toBe('pending');
    expect(document.getElementById('request-row-jreq_0001')?.getAttribute('aria-current')).toBe('true');
    expect(within(table).getAllByTestId('vouched-mac')[0]!.textContent).toBe('52:54:00:12:34:56');
    expect(selection()).toBe('Current: jreq_0001');
    expect(screen.getByRole('region', { name: 'Request jreq_0001' })).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'jreq_0002' }));
    expect(selection()).toBe('Current: jreq_0002');
    expect(screen.getByRole('region', { name: 'Request jreq_0002' })).toBeTruthy();
  });

  it('selects all on the page, a range with Shift, and offers every match beyond the page', () => {
    render(<Queue />);
    fireEvent.click(box('Select all requests on this page'));
    expect(selection()).toBe('3 selected');
    expect(screen.getByRole('button', { name: 'Approve 3' })).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Select all 5 pending' }));
    expect(selection()).toBe('All 5 matching selected');
    expect(screen.getByRole('button', { name: 'Approve 5' })).toBeTruthy();
    fireEvent.click(box('Select all requests on this page'));
    expect(selection()).toBe('Current: jreq_0001');

    fireEvent.click(box('Select request jreq_0001'));
    fireEvent.click(box('Select request jreq_0003'), { shiftKey: true });
    expect(selection()).toBe('3 selected');
    expect(rows.every((row) => box(`Select request ${row.id}`).checked)).toBe(true);
    fireEvent.click(box('Select request jreq_0003'));
    fireEvent.click(box('Select request jreq_0002'), { shiftKey: true });
    expect(selection()).toBe('1 selected');
    expect(box('Select request jreq_0001').checked).toBe(true);
  });

  it('approves the current request into the chosen pool with the lifetime and reason, and says so', async () => {
    const onDecided = vi.fn();
    client.joinRequests.approveMany.mutate.mockResolvedValue({
      approved: [request('jreq_0001', { state: 'approved' })],
      recorded: [],
      skipped: [],
    });
    render(<Queue onDecided={onDecided} />);
    fireEvent.click(screen.getByRole('button', { name: 'Approve' }));
    const approve = dialog('Approve request');
    fireEvent.click(within(approve).getByLabelText('15 min'));
    fireEvent.change(within(approve).getByLabelText(/Reason/), { target: { value: ' rack 7 intake ' } });
    fireEvent.click(within(approve).getByRole('button', { name: 'Approve', hidden: true }));
    await waitFor(() => expect(onDecided).toHaveBeenCalled());
    expect(client.joinRequests.approveMany.mutate).toHaveBeenCalledWith({
      tenantId: tenant.id,
      poolId: pool.id,
      requestIds: ['jreq_0001'],
      ttlSeconds: 900,
      reason: 'rack 7 intake',
    });
    await screen.findByText('Approved request jreq_0001 into pool east-bcd.');
    expect(screen.queryByRole('dialog', { name: 'Approve request', hidden: true })).toBeNull();
  });

  it('rejects a selection only with a reason, and keeps the dialog with the error when the server refuses', async () => {
    client.joinRequests.rejectMany.mutate.mockRejectedValueOnce(new Error('The database is away.'));
    render(<Queue />);
    fireEvent.click(box('Select request jreq_0001'));
    fireEvent.click(box('Select request jreq_0002'));
    fireEvent.click(screen.getByRole('button', { name: 'Reject 2' }));
    const reject = dialog('Reject 2 requests');
    fireEvent.click(within(reject).getByRole('button', { name: 'Reject', hidden: true }));
    expect(within(reject).getByRole('alert', { hidden: true }).textContent).toContain('a rejection is final');
    expect(client.joinRequests.rejectMany.mutate).not.toHaveBeenCalled();

    fireEvent.change(within(reject).getByLabelText(/Reason/), { target: { value: 'not our hardware' } });
    fireEvent.click(within(reject).getByRole('button', { name: 'Reject', hidden: true }));
    await waitFor(() => expect(within(reject).getByRole('alert', { hidden: true }).textContent).toBeTruthy());
    expect(client.joinRequests.rejectMany.mutate).toHaveBeenCalledWith({
      tenantId: tenant.id,
      poolId: pool.id,
      requestIds: ['jreq_0001', 'jreq_0002'],
      reason: 'not our hardware',
    });
    expect(screen.getByRole('dialog', { name: 'Reject 2 requests', hidden: true })).toBeTruthy();
  });

  it('offers no decision to a viewer', () => {
    render(<Queue canDecide={false} />);
    expect(screen.queryByRole('button', { name: /^(Approve|Reject)/ })).toBeNull();
    expect(screen.queryByRole('columnheader', { name: 'Decide' })).toBeNull();
  });
});
