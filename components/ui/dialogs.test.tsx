// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfirmDialog } from './confirm-dialog';
import { FormDialog } from './form-dialog';

afterEach(cleanup);

const button = (name: string) => screen.getByRole('button', { name, hidden: true }) as HTMLButtonElement;

describe('FormDialog', () => {
  const props = { open: true, title: 'Create site', submitLabel: 'Create site', pendingLabel: 'Creating…', onClose: () => {} };

  it('submits once, then says it is pending and cannot be sent or cancelled again', () => {
    const onSubmit = vi.fn();
    const { rerender } = render(
      <FormDialog {...props} isPending={false} onSubmit={onSubmit}>
        <input aria-label="Name" />
      </FormDialog>,
    );
    fireEvent.click(button('Create site'));
    expect(onSubmit).toHaveBeenCalledOnce();
    rerender(
      <FormDialog {...props} isPending onSubmit={onSubmit}>
        <input aria-label="Name" />
      </FormDialog>,
    );
    expect(button('Creating…').disabled).toBe(true);
    expect(button('Cancel').disabled).toBe(true);
    fireEvent.submit(button('Creating…').closest('form')!);
    expect(onSubmit).toHaveBeenCalledOnce();
  });

  it("shows the server's error in the dialog", () => {
    render(
      <FormDialog {...props} isPending={false} error="A site of that name exists." onSubmit={() => {}}>
        <input aria-label="Name" />
      </FormDialog>,
    );
    const alert = screen.getByRole('alert', { hidden: true });
    expect(alert.textContent).toBe('A site of that name exists.');
    expect(alert.closest('dialog')).not.toBeNull();
  });

  it('sends nothing while its own checks fail, and focuses the first invalid control once they render', async () => {
    const onSubmit = vi.fn();
    const validate = vi.fn(() => false);
    render(
      <FormDialog {...props} isPending={false} validate={validate} onSubmit={onSubmit}>
        <input aria-label="Name" />
        <input aria-label="Port" aria-invalid="true" />
      </FormDialog>,
    );
    fireEvent.click(button('Create site'));
    expect(validate).toHaveBeenCalledOnce();
    expect(onSubmit).not.toHaveBeenCalled();
    await new Promise((resolve) => requestAnimationFrame(resolve));
    expect(document.activeElement).toBe(screen.getByRole('textbox', { name: 'Port', hidden: true }));
    validate.mockReturnValue(true);
    fireEvent.click(button('Create site'));
    expect(onSubmit).toHaveBeenCalledOnce();
  });

  it('names its other button as told and can start the focus there', () => {
    const onClose = vi.fn();
    render(
      <FormDialog {...props} isPending={false} cancelLabel="Close" focusCancel onSubmit={() => {}} onClose={onClose}>
        <p>Nothing to fill in.</p>
      </FormDialog>,
    );
    const close = screen.getAllByRole('button', { name: 'Close', hidden: true }).at(-1)!;
    expect(close.hasAttribute('data-autofocus')).toBe(true);
    fireEvent.click(close);
    expect(onClose).toHaveBeenCalledOnce();
  });
});

describe('ConfirmDialog', () => {
  const props = {
    open: true,
    title: 'Revoke token?',
    confirmLabel: 'Revoke',
    pendingLabel: 'Revoking…',
    isPending: false,
    onClose: () => {},
  };

  it('keeps the action disabled until a required reason is written, then hands it over trimmed', () => {
    const onConfirm = vi.fn();
    render(
      <ConfirmDialog {...props} reason={{ label: 'Reason', required: true }} onConfirm={onConfirm}>
        <p>It admits no machine afterwards.</p>
      </ConfirmDialog>,
    );
    expect(button('Revoke').disabled).toBe(true);
    fireEvent.change(screen.getByRole('textbox', { name: 'Reason', hidden: true }), { target: { value: '   ' } });
    expect(button('Revoke').disabled).toBe(true);
    fireEvent.change(screen.getByRole('textbox', { name: 'Reason', hidden: true }), { target: { value: '  leaked in a ticket ' } });
    expect(button('Revoke').disabled).toBe(false);
    fireEvent.click(button('Revoke'));
    expect(onConfirm).toHaveBeenCalledWith('leaked in a ticket');
  });

  it('confirms without a reason when none is asked, and shows the error', () => {
    const onConfirm = vi.fn();
    render(
      <ConfirmDialog {...props} error="Already revoked." onConfirm={onConfirm}>
        <p>Sure?</p>
      </ConfirmDialog>,
    );
    expect(screen.queryByRole('textbox', { hidden: true })).toBeNull();
    expect(screen.getByRole('alert', { hidden: true }).textContent).toBe('Already revoked.');
    fireEvent.click(button('Revoke'));
    expect(onConfirm).toHaveBeenCalledWith('');
  });

  it('keeps the action disabled while it cannot be taken, and shows the error about the reason under it', () => {
    const { rerender } = render(
      <ConfirmDialog {...props} cannotConfirm onConfirm={() => {}}>
        <p>Tick the box first.</p>
      </ConfirmDialog>,
    );
    expect(button('Revoke').disabled).toBe(true);
    rerender(
      <ConfirmDialog {...props} reason={{ label: 'Reason', error: 'Too long.' }} onConfirm={() => {}}>
        <p>Tick the box first.</p>
      </ConfirmDialog>,
    );
    expect(button('Revoke').disabled).toBe(false);
    const reason = screen.getByRole('textbox', { name: /^Reason/, hidden: true });
    expect(reason.getAttribute('aria-invalid')).toBe('true');
    expect(screen.getByRole('alert', { hidden: true }).textContent).toBe('Too long.');
  });
});
