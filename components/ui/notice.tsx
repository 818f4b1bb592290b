/** What the page's last action did ("Pool … created"), announced, until dismissed or the next action. */
export function Notice({ notice, onDismiss }: { notice: string | null; onDismiss: () => void }) {
  return (
    <div role="status" aria-live="polite" className="notice-slot">
      {notice && (
        <p className="callout callout-success">
          {notice}{' '}
          <button type="button" className="link-button" onClick={onDismiss}>
            Dismiss
          </button>
        </p>
      )}
    </div>
  );
}

/** A checkbox that changes what a list shows ("Show archived"), among a page header's actions. */
export function Toggle({ label, checked, onChange }: { label: string; checked: boolean; onChange: (checked: boolean) => void }) {
  return (
    <label className="toggle">
      <input type="checkbox" checked={checked} onChange={(event) => onChange(event.target.checked)} />
      {label}
    </label>
  );
}
