import type { ReactNode } from 'react';

/** A fieldset of radios, checkboxes or related inputs with its legend, hint and the error about the group. */
export function ChoiceGroup(props: { legend: string; hint?: string; error?: string | null; optional?: boolean; children: ReactNode }) {
  const { legend, hint, error, optional, children } = props;
  return (
    <fieldset className={`fieldset${error ? ' field-invalid' : ''}`} aria-invalid={error ? true : undefined}>
      <legend className="field-label">
        {legend}
        {optional && <span className="field-optional">optional</span>}
      </legend>
      {hint && <p className="field-hint">{hint}</p>}
      {children}
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </fieldset>
  );
}
