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

interface ChoiceProps {
  type?: 'checkbox' | 'radio';
  /** A radio's group name and value. */
  name?: string;
  value?: string;
  label: ReactNode;
  hint: ReactNode;
  error?: string | null;
  checked: boolean;
  onChange: (checked: boolean) => void;
}

/** One checkbox or radio with its label and hint, and the error about it when it has its own. */
export function Choice({ type = 'checkbox', name, value, label, hint, error, checked, onChange }: ChoiceProps) {
  return (
    <label className="choice">
      <input
        type={type}
        name={name}
        value={value}
        checked={checked}
        onChange={(event) => onChange(event.target.checked)}
        aria-invalid={error ? true : undefined}
      />
      <span className="choice-label">
        {label}
        <span className="choice-hint">{hint}</span>
        {error && (
          <span className="field-error" role="alert">
            {error}
          </span>
        )}
      </span>
    </label>
  );
}

interface RadioChoicesProps<T extends string | number> {
  name: string;
  options: readonly { value: T; label: ReactNode; hint: ReactNode }[];
  value: T;
  onChange: (value: T) => void;
}

/** The radios of one group, a Choice for each option, the one whose value is `value` checked. */
export function RadioChoices<T extends string | number>({ name, options, value, onChange }: RadioChoicesProps<T>) {
  return options.map((option) => (
    <Choice
      key={option.value}
      type="radio"
      name={name}
      value={String(option.value)}
      label={option.label}
      hint={option.hint}
      checked={option.value === value}
      onChange={() => onChange(option.value)}
    />
  ));
}
