'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { toApiError } from '@/lib/api-errors';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import { parseLabelArgument } from '@/protocol/api/labels';

interface NodeLabelsEditorProps {
  tenantId: string;
  nodeId: string;
  /** The node's labels as the page read them (the node's `labels`). */
  labels: Record<string, string>;
  /** false: the labels are shown, not editable (a role without nodes:manage, a retired node). Default true. */
  editable?: boolean;
}

/**
 * A node's labels, each removable, and a key/value pair to add or override one: every change is one
 * `nodes.setLabels` call (audited as `node.labels-changed`), after which the node's queries are read again.
 * Labels are descriptive: they never reach the certificate and grant nothing.
 */
export function NodeLabelsEditor({ tenantId, nodeId, labels, editable = true }: NodeLabelsEditorProps) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [shown, setShown] = useState<Record<string, string> | null>(null);
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [formError, setFormError] = useState<string | null>(null);
  const current = shown ?? labels;

  const change = useMutation({
    mutationKey: trpc.nodes.setLabels.mutationKey(),
    mutationFn: (input: { set?: Record<string, string>; remove?: string[] }) =>
      client.nodes.setLabels.mutate({ tenantId, nodeId, ...input }),
    onSuccess: async (node) => {
      setShown(node.labels);
      await queryClient.invalidateQueries(trpc.nodes.pathFilter());
    },
  });
  const apiError = change.error ? toApiError(change.error) : null;

  function onAdd(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const label = parseLabelArgument(`${key.trim()}=${value.trim()}`);
    if (!label) {
      setFormError('A key of a-z, 0-9, . _ - / (at most 63, starting and ending with a letter or digit); a value without = or ","');
      return;
    }
    setFormError(null);
    change.mutate({ set: { [label.key]: label.value } }, { onSuccess: () => (setKey(''), setValue('')) });
  }

  const entries = Object.entries(current).sort(([a], [b]) => a.localeCompare(b));
  return (
    <div style={{ minWidth: 0 }}>
      {entries.length ? (
        <ul className="tags" aria-label="Node labels">
          {entries.map(([k, v]) => (
            <li key={k} className="tag">
              <span className="tag-key">{k}</span> <span>{v}</span>
              {editable && (
                <button
                  type="button"
                  className="btn-quiet"
                  aria-label={`Remove label ${k}`}
                  disabled={change.isPending}
                  onClick={() => change.mutate({ remove: [k] })}
                >
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">No labels.</p>
      )}
      {editable && (
        <form
          onSubmit={onAdd}
          aria-busy={change.isPending}
          noValidate
          style={{ display: 'flex', flexWrap: 'wrap', gap: 8, alignItems: 'flex-end', marginTop: 8 }}
        >
          <LabelPart label="Key" value={key} onChange={setKey} placeholder="rack" invalid={Boolean(formError)} />
          <LabelPart label="Value" value={value} onChange={setValue} placeholder="c7" />
          <button type="submit" className="btn btn-small" disabled={change.isPending || !key.trim()}>
            {change.isPending ? 'Saving…' : 'Add label'}
          </button>
        </form>
      )}
      {(formError ?? apiError) && (
        <p className="form-error" role="alert">
          {formError ?? apiError!.message}
        </p>
      )}
    </div>
  );
}

/** The key or the value of the label being added. */
function LabelPart(props: { label: string; value: string; onChange: (text: string) => void; placeholder: string; invalid?: boolean }) {
  return (
    <label style={{ display: 'grid', gap: 2, minWidth: 0 }}>
      <span className="field-label">{props.label}</span>
      <input
        type="text"
        className="input-mono"
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        placeholder={props.placeholder}
        autoComplete="off"
        spellCheck={false}
        aria-invalid={props.invalid || undefined}
      />
    </label>
  );
}
