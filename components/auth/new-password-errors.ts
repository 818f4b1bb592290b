/** The server's minimum (server/operators/change-password.ts), checked in the form first. */
export const MIN_PASSWORD_LENGTH = 12;

export type NewPasswordField = 'current' | 'new' | 'repeat';

/**
 * Every problem of a new-password form at once, by field, so the person fixes them in one go instead of
 * meeting them one submit at a time. Empty when the form may be sent.
 */
export function newPasswordErrors(input: {
  /** The current (or one-time) password, for forms that ask for it. */
  current?: string;
  newPassword: string;
  repeat: string;
}): Partial<Record<NewPasswordField, string>> {
  const errors: Partial<Record<NewPasswordField, string>> = {};
  if (input.current !== undefined && !input.current) errors.current = 'Give your current password.';
  if (input.newPassword.length < MIN_PASSWORD_LENGTH) errors.new = `Use at least ${MIN_PASSWORD_LENGTH} characters.`;
  else if (input.current && input.newPassword === input.current) errors.new = 'Choose a password other than the current one.';
  if (!input.repeat) errors.repeat = 'Repeat the new password.';
  else if (input.repeat !== input.newPassword) errors.repeat = 'The two new passwords differ.';
  return errors;
}
