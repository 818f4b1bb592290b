'use client';

import { useState } from 'react';
import { LabelsField, labelsInputOf, labelsOfText } from '@/components/nodes/labels-field';
import { Field } from '@/components/ui/field';
import { DataTable, type DataColumn } from '@/components/ui/data-table';
import { toApiError } from '@/lib/api-errors';
import type { Pool } from '@/lib/api-types';
import { useTRPCClient } from '@/lib/trpc';
import { formatOfName, splitImport } from '@/protocol/api/expected-import-parts';

interface Outcome {
  importId: string | null;
  accepted: number;
  rejected: { row: number; reason: string }[];
  sample: {
    row: number;
    serial: string | null;
    productUuid: string | null;
    mac: string | null;
    gpuUuid: string | null;
    poolId: string | null;
    hostname: string | null;
  }[];
  isPreview: boolean;
}

/**
 * Import a CSV or JSON list: preview first (what would be stored, and each rejected row with why), then
 * import. A large file goes in parts of 2,000 rows under one import id, with a progress bar.
 */
export function ImportPanel({
  scope,
  pools,
  onImported,
  onClose,
}: {
  scope: { tenantId: string; siteId: string };
  pools: Pool[];
  onImported: () => void;
  onClose: () => void;
}) {
  const client = useTRPCClient();
  const [content, setContent] = useState('');
  const [format, setFormat] = useState<'csv' | 'json'>('csv');
  const [poolId, setPoolId] = useState('');
  const [labelsText, setLabelsText] = useState('');
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [error, setError] = useState<{ message: string; field: string | null } | null>(null);
  const isBusy = progress !== null && progress.sent < progress.total;

  async function run(isPreview: boolean) {
    setError(null);
    setOutcome(null);
    if (!content.trim()) return setError({ message: 'Paste a list or choose a file first.', field: 'content' });
    const labels = labelsOfText(labelsText);
    if ('error' in labels) return setError({ message: labels.error, field: 'labels' });
    const parts = splitImport(format, content);
    const total = parts.reduce((n, p) => n + p.rows, 0);
    const result: Outcome = { importId: null, accepted: 0, rejected: [], sample: [], isPreview };
    setProgress({ sent: 0, total });
    try {
      let sent = 0;
      for (const part of parts) {
        const answer = await client.expectedMachines.import.mutate({
          ...scope,
          format,
          content: part.content,
          preview: isPreview,
          rowOffset: part.offset,
          ...(poolId ? { defaultPoolId: poolId } : {}),
          ...(result.importId ? { importId: result.importId } : {}),
          ...labelsInputOf(labelsText),
        });
        result.importId = answer.importId ?? result.importId;
        result.accepted += answer.accepted;
        result.rejected.push(...answer.rejected);
        if (result.sample.length < 20) result.sample.push(...answer.sample.slice(0, 20 - result.sample.length));
        sent += part.rows;
        setProgress({ sent, total });
      }
      setOutcome(result);
      if (!isPreview) onImported();
    } catch (caught) {
      const apiError = toApiError(caught);
      setError({ message: apiError.message, field: apiError.field });
      // What was stored before the failing part stays, under its import id: say so.
      if (!isPreview && result.importId) setOutcome(result);
    } finally {
      setProgress((p) => (p ? { ...p, sent: p.total } : null));
    }
  }

  async function readFile(file: File) {
    setFormat(formatOfName(file.name));
    setContent(await file.text());
    setOutcome(null);
  }

  return (
    <section className="panel form" aria-label="Import expected machines" aria-busy={isBusy}>
      <h2 className="detail-heading">Import expected machines</h2>
      {error && !['content', 'defaultPoolId', 'labels'].includes(error.field ?? '') && (
        <p className="form-error" role="alert">
          {error.message}
        </p>
      )}
      <div className="form-grid">
        <Field
          label="File"
          optional
          hint="CSV with a header row (serial, productUuid, mac, gpuUuid, pool, hostname, expiresAt, labels as rack=c7;env=prod) or a JSON array of objects."
        >
          {(control) => (
            <input
              {...control}
              type="file"
              accept=".csv,.json,text/csv,application/json"
              onChange={(e) => e.target.files?.[0] && void readFile(e.target.files[0])}
            />
          )}
        </Field>
        <Field label="Format">
          {(control) => (
            <select {...control} value={format} onChange={(e) => setFormat(e.target.value as 'csv' | 'json')}>
              <option value="csv">CSV</option>
              <option value="json">JSON</option>
            </select>
          )}
        </Field>
        <Field
          label="Default pool"
          optional
          error={error?.field === 'defaultPoolId' ? error.message : null}
          hint="For rows that name no pool."
        >
          {(control) => (
            <select {...control} value={poolId} onChange={(e) => setPoolId(e.target.value)}>
              <option value="">None: rows must name one</option>
              {pools.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name} ({p.id})
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <LabelsField
        value={labelsText}
        onChange={(text) => (setLabelsText(text), setOutcome(null))}
        error={error?.field === 'labels' ? error.message : null}
        hint="Every listed machine's node gets them when it arrives; a row's labels column overrides a key."
      />
      <Field label="List" error={error?.field === 'content' ? error.message : null} hint="Or paste it here.">
        {(control) => (
          <textarea
            {...control}
            className="input-mono"
            rows={6}
            spellCheck={false}
            value={content}
            placeholder={'serial,mac,pool\nSN-7701,3c:ec:ef:12:34:56,pool_…'}
            onChange={(e) => (setContent(e.target.value), setOutcome(null))}
          />
        )}
      </Field>
      {progress && progress.total > 0 && (
        <p className="field-hint">
          <progress value={progress.sent} max={progress.total} aria-label="Rows sent" /> {progress.sent.toLocaleString()} of{' '}
          {progress.total.toLocaleString()} rows
        </p>
      )}
      {outcome && <ImportOutcome outcome={outcome} />}
      <footer className="dialog-footer">
        <button type="button" className="btn" onClick={onClose} disabled={isBusy}>
          Close
        </button>
        <button type="button" className="btn" onClick={() => void run(true)} disabled={isBusy}>
          Preview
        </button>
        <button
          type="button"
          className="btn btn-primary"
          onClick={() => void run(false)}
          disabled={isBusy || !outcome?.isPreview || outcome.accepted === 0}
        >
          Import {outcome?.isPreview ? `${outcome.accepted.toLocaleString()} machines` : ''}
        </button>
      </footer>
    </section>
  );
}

type Rejected = Outcome['rejected'][number];
type Sample = Outcome['sample'][number];

const rowColumn = <T extends { row: number }>(): DataColumn<T> => ({
  id: 'row',
  header: 'Row',
  className: 'cell-number',
  cell: (r) => r.row,
});
const orDash = <T,>(id: string, header: string, value: (r: T) => string | null | undefined): DataColumn<T> => ({
  id,
  header,
  cell: (r) => value(r) ?? '—',
});

const REJECTED_COLUMNS: DataColumn<Rejected>[] = [rowColumn(), { id: 'why', header: 'Why', className: 'cell-wrap', cell: (r) => r.reason }];

const SAMPLE_COLUMNS: DataColumn<Sample>[] = [
  rowColumn(),
  orDash('serial', 'Serial', (r) => r.serial),
  orDash('mac', 'MAC', (r) => r.mac),
  orDash('uuid', 'Product UUID', (r) => r.productUuid),
  orDash('pool', 'Pool', (r) => r.poolId),
  orDash('hostname', 'Hostname', (r) => r.hostname),
];

function ImportOutcome({ outcome }: { outcome: Outcome }) {
  return (
    <div aria-live="polite">
      <p>
        <strong>
          {outcome.isPreview ? 'Would import' : 'Imported'} {outcome.accepted.toLocaleString()} machines
        </strong>
        {outcome.importId && (
          <>
            {' '}
            as import <code>{outcome.importId}</code>
          </>
        )}
        ; {outcome.rejected.length} rows rejected.
      </p>
      {outcome.rejected.length > 0 && (
        <DataTable
          rows={outcome.rejected.slice(0, 200)}
          columns={REJECTED_COLUMNS}
          rowKey={(r) => String(r.row)}
          label="Rejected rows"
          caption="Rejected rows"
          cards
        />
      )}
      {outcome.isPreview && outcome.sample.length > 0 && (
        <DataTable
          rows={outcome.sample}
          columns={SAMPLE_COLUMNS}
          rowKey={(r) => String(r.row)}
          label="First accepted rows"
          caption="First accepted rows"
          cards
        />
      )}
    </div>
  );
}
