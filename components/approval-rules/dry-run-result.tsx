import { CONDITIONS } from '@/lib/approval-rule-form';
import type { DryRunAnswer } from '@/server/rules/schemas';
import { TableScroll } from '@/components/ui/table-scroll';

const SOURCE_WORDS = { vouched: 'vouched for by the boot step', claimed: "the machine's own claim" } as const;
const FIELD_LABELS: Record<string, string> = Object.fromEntries(CONDITIONS.map((c) => [c.key, c.label]));
FIELD_LABELS.attestor = 'Attestor';

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
        <TableScroll label="Matching requests">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Request</th>
                <th scope="col">State</th>
                <th scope="col">MAC (vouched)</th>
                <th scope="col">Hostname (claimed)</th>
                <th scope="col">The rule would</th>
              </tr>
            </thead>
            <tbody>
              {answer.items.map((i) => (
                <tr key={i.requestId}>
                  <td>
                    <code>{i.requestId}</code>
                  </td>
                  <td>{i.state}</td>
                  <td>{i.mac ?? '—'}</td>
                  <td>{i.hostname ?? '—'}</td>
                  <td>{i.decidedEarlierBy ? <span className="muted">nothing: rule {i.decidedEarlierBy} decides first</span> : i.action}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </section>
  );
}
