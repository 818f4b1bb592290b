import { describe, expect, it } from 'vitest';
import { MIN_PASSWORD_LENGTH, newPasswordErrors } from './new-password-errors';

describe('new-password form errors', () => {
  it('reports every problem at once, one per field', () => {
    expect(newPasswordErrors({ current: '', newPassword: 'short', repeat: 'other' })).toEqual({
      current: 'Give your current password.',
      new: `Use at least ${MIN_PASSWORD_LENGTH} characters.`,
      repeat: 'The two new passwords differ.',
    });
    expect(newPasswordErrors({ newPassword: 'short', repeat: '' })).toEqual({
      new: `Use at least ${MIN_PASSWORD_LENGTH} characters.`,
      repeat: 'Repeat the new password.',
    });
  });

  it('refuses the current password as the new one, and is empty for a good form', () => {
    const current = 'the-current-password';
    expect(newPasswordErrors({ current, newPassword: current, repeat: current })).toEqual({
      new: 'Choose a password other than the current one.',
    });
    expect(newPasswordErrors({ current, newPassword: 'a-brand-new-password', repeat: 'a-brand-new-password' })).toEqual({});
    expect(newPasswordErrors({ newPassword: 'a-brand-new-password', repeat: 'a-brand-new-password' })).toEqual({});
  });
});
