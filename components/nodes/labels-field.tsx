'use client';

import { Field } from '@/components/ui/field';
import { labelsSchema, parseLabelList } from '@/protocol/api/labels';

/**
 * Labels typed as one text (`rack=c7, env=prod`; `;` also separates), as the dialogs that give labels at join
 * take them: the labels, or what is wrong in words. Blank: none.
 */
export function labelsOfText(text: string): { labels: Record<string, string> } | { error: string } {
  const parsed = parseLabelList(text);
  if ('invalid' in parsed)
    return { error: `"${parsed.invalid}" is not a label: use key=value (key: a-z, 0-9, . _ - /; value without = or ",")` };
  const bounded = labelsSchema.safeParse(parsed.labels);
  if (!bounded.success) return { error: bounded.error.issues[0]?.message ?? 'not a set of labels' };
  return { labels: bounded.data };
}

/** The labels of `text` as a request field: absent when blank. */
export const labelsInputOf = (text: string) => {
  const parsed = labelsOfText(text);
  return 'labels' in parsed && Object.keys(parsed.labels).length ? { labels: parsed.labels } : {};
};

interface LabelsFieldProps {
  value: string;
  onChange: (text: string) => void;
  error?: string | null;
  /** What the labels do here (who gets them, over what). */
  hint: string;
}

/** A labelled text input for `key=value` labels, with its hint and error. */
export function LabelsField({ value, onChange, error, hint }: LabelsFieldProps) {
  return (
    <Field label="Labels" optional error={error} hint={hint}>
      {(control) => (
        <input
          {...control}
          type="text"
          className="input-mono"
          autoComplete="off"
          spellCheck={false}
          placeholder="rack=c7, env=prod"
          value={value}
          onChange={(event) => onChange(event.target.value)}
        />
      )}
    </Field>
  );
}
