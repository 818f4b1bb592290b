// @vitest-environment happy-dom
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { QueueFilterParams } from '@/lib/join-request-queue';
import { QueueFilters } from './queue-filters';
import { QueueStates, emptyQueueText } from './queue-states';

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

const none: QueueFilterParams = { q: null, attestor: null, vouchedBy: null, trusted: null, olderThan: null, newerThan: null };

describe('QueueFilters', () => {
  it('sends the search once typing pauses, at once on Enter, and a cleared search as none', () => {
    vi.useFakeTimers();
    const onChange = vi.fn();
    render(<QueueFilters params={none} onChange={onChange} ignored={[]} />);
    const search = screen.getByRole('searchbox', { name: /Search by MAC/ });
    fireEvent.change(search, { target: { value: 'sim-1 ' } });
    expect(onChange).not.toHaveBeenCalled();
    void act(() => vi.advanceTimersByTime(300));
    expect(onChange).toHaveBeenCalledWith({ q: 'sim-1' });
    fireEvent.change(search, { target: { value: '' } });
    fireEvent.keyDown(search, { key: 'Enter' });
    expect(onChange).toHaveBeenLastCalledWith({ q: null });
  });

  it('puts each filter in its parameter, and names the parameters it could not read', () => {
    const onChange = vi.fn();
    render(<QueueFilters params={{ ...none, attestor: 'tpm' }} onChange={onChange} ignored={['olderThan']} />);
    expect((screen.getByRole('combobox', { name: 'Attestor' }) as HTMLSelectElement).value).toBe('tpm');
    fireEvent.change(screen.getByRole('combobox', { name: 'Attestor' }), { target: { value: '' } });
    expect(onChange).toHaveBeenLastCalledWith({ attestor: null });
    fireEvent.change(screen.getByRole('combobox', { name: 'Hardware key' }), { target: { value: 'yes' } });
    expect(onChange).toHaveBeenLastCalledWith({ trusted: 'yes' });
    fireEvent.change(screen.getByRole('combobox', { name: 'Age' }), { target: { value: '1h' } });
    expect(onChange).toHaveBeenLastCalledWith({ olderThan: '1h' });
    const vouched = screen.getByRole('textbox', { name: 'Vouched by (exact identity)' });
    fireEvent.change(vouched, { target: { value: ' pxe-east ' } });
    fireEvent.keyDown(vouched, { key: 'Enter' });
    expect(onChange).toHaveBeenLastCalledWith({ vouchedBy: 'pxe-east' });
    expect(screen.getByRole('status').textContent).toBe('Ignored olderThan: not a value this filter takes.');
  });
});

describe('QueueStates', () => {
  const list = { isPending: false, isError: false, error: null, refetch: vi.fn(async () => undefined) };
  const queue = <p>the queue</p>;

  it('says it is loading, then shows the queue once there are rows', () => {
    const { rerender } = render(
      <QueueStates list={{ ...list, isPending: true }} rows={[]} filter="pending" isFiltered={false}>
        {queue}
      </QueueStates>,
    );
    expect(screen.getByRole('status').textContent).toBe('Loading join requests…');
    rerender(
      <QueueStates list={list} rows={[{}]} filter="pending" isFiltered={false}>
        {queue}
      </QueueStates>,
    );
    expect(screen.getByText('the queue')).toBeTruthy();
  });

  it('shows what failed with a Retry that reads the list again', () => {
    const refetch = vi.fn(async () => undefined);
    render(
      <QueueStates list={{ ...list, isError: true, error: new Error('boom'), refetch }} rows={[]} filter="pending" isFiltered={false}>
        {queue}
      </QueueStates>,
    );
    expect(screen.getByRole('alert').textContent).toContain('Could not load join requests.');
    fireEvent.click(screen.getByRole('button', { name: 'Retry' }));
    expect(refetch).toHaveBeenCalledOnce();
    expect(screen.queryByText('the queue')).toBeNull();
  });

  it('says why the queue is empty, for the state and the filters', () => {
    render(
      <QueueStates list={list} rows={[]} filter="pending" isFiltered={false}>
        {queue}
      </QueueStates>,
    );
    expect(screen.getByText('No machine is waiting. New requests appear here as they arrive.')).toBeTruthy();
    expect(emptyQueueText('pending', true)).toBe('No request matches the search and filters.');
    expect(emptyQueueText('rejected', false)).toBe('No rejected requests.');
    expect(emptyQueueText('all', false)).toBe('No requests.');
  });
});
