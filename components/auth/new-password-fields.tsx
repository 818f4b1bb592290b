import type { ComponentProps, ReactNode } from 'react';
import { Field } from '@/components/ui/field';
import { MIN_PASSWORD_LENGTH, type NewPasswordField } from './new-password-errors';

interface NewPasswordFieldsProps {
  /** The account's email, in a hidden username field, so a password manager saves the new password under it. */
  email: string;
  currentLabel: string;
  newHint: ReactNode;
  /** What `newPasswordErrors` found, by field, and the server's answer about the whole form. */
  errors: Partial<Record<NewPasswordField | 'form', string>>;
  /** Marks the fields required (the new one with its minimum length) and focuses the first. */
  isRequired?: boolean;
}

/** The form's error, then the current password, the new one and its repetition, named for password managers. */
export function NewPasswordFields({ email, currentLabel, newHint, errors, isRequired }: NewPasswordFieldsProps) {
  const password =
    (name: string, autoComplete: 'current-password' | 'new-password', more: ComponentProps<'input'> = {}) =>
    (control: ComponentProps<'input'>) => (
      <input {...control} name={name} type="password" autoComplete={autoComplete} required={isRequired} {...more} />
    );
  return (
    <>
      {errors.form && (
        <p className="form-error" role="alert">
          {errors.form}
        </p>
      )}
      <input type="hidden" name="username" autoComplete="username" value={email} readOnly />
      <Field label={currentLabel} error={errors.current}>
        {password('currentPassword', 'current-password', { autoFocus: isRequired })}
      </Field>
      <Field label="New password" error={errors.new} hint={newHint}>
        {password('newPassword', 'new-password', { minLength: isRequired ? MIN_PASSWORD_LENGTH : undefined })}
      </Field>
      <Field label="Repeat the new password" error={errors.repeat}>
        {password('repeatPassword', 'new-password')}
      </Field>
    </>
  );
}
