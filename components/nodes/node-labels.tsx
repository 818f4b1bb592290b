/** A node's labels, read-only: `key=value` tags, or a word that it has none. */
export function NodeLabels({ labels }: { labels: Record<string, string> }) {
  const entries = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  if (!entries.length) return <p className="panel-empty">No labels.</p>;
  return (
    <ul className="tags panel-body" aria-label="Labels">
      {entries.map(([key, value]) => (
        <li key={key} className="tag">
          <span className="tag-key">{key}</span> <span>{value}</span>
        </li>
      ))}
    </ul>
  );
}
