import { CONDITIONS } from '@/lib/approval-rule-form';
import type { DryRunAnswer } from '@/server/rules/schemas';
import { DataTable, type DataColumn } from '@/components/ui/data-table';

const SOURCE_WORDS = { vouched: 'vouched for by the boot step', claimed: "the machine's own claim" } as const;
const FIELD_LABELS: Record<string, string> = Object.fromEntries(CONDITIONS.map((c) => [c.key, c.label]));
FIELD_LABELS.attestor = 'Attestor';

type Item = DryRunAnswer['items'][number];

const DRY_RUN_COLUMNS: DataColumn<Item>[] = [
  { id: 'request', header: 'Request', cell: (i) => <code>{i.requestId}</code> },
  { id: 'state', header: 'State', cell: (i) => i.state },
  { id: 'mac', header: 'MAC (vouched)', cell: (i) => i.mac ?? '—' },
  { id: 'hostname', header: 'Hostname (claimed)', cell: (i) => i.hostname ?? '—' },
  {
    id: 'action',
    header: 'The rule would',
    cell: (i) => (i.decidedEarlierBy ? <span className="muted">nothing: rule {i.decidedEarlierBy} decides first</span> : i.action),
  },
];

export function DryRunResult({ answer }: { answer: DryRunAnswer }) {
  const decides = answer.items.filter((i) => !i.decidedEarlierBy);
  return (
    <section className="dry-run" aria-label="Dry run" aria-live="polite">
      <h3 className="detail-heading">
        Dry run: {decides.length} of {answer.considered} requests
      </h3>
      <p className="field-hint">
        Matched on{' '}
        {answer.matchedOn.map((m, i) => (
          <span key={m.field}>
            {i > 0 && ', '}
            <strong>{FIELD_LABELS[m.field] ?? m.field}</strong> ({SOURCE_WORDS[m.source]})
          </span>
        ))}
        . Claims are the machine's own word; what the boot step vouched for is not.
      </p>
      {answer.items.length === 0 ? (
        <p className="muted">No pending request, nor any of the last 7 days, matches.</p>
      ) : (
        <DataTable rows={answer.items} columns={DRY_RUN_COLUMNS} rowKey={(i) => i.requestId} label="Matching requests" cards />
      )}
    </section>
  );
}
