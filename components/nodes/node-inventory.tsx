import type { NodeDetail } from '@/protocol/api/node-schemas';

/** A claim as a list of values: arrays as they are, a single value as one, absent or empty as none. */
function valuesOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v) => v !== null && v !== undefined && v !== '').map(String);
  return value === undefined || value === null || value === '' ? [] : [String(value)];
}

/** The rows of the inventory, in the order an operator reads a machine: who it is, then what is in it. */
const INVENTORY: Array<{ label: string; keys: string[]; isList?: boolean }> = [
  { label: 'Hostname', keys: ['hostname'] },
  { label: 'Vendor', keys: ['sysVendor'] },
  { label: 'Model', keys: ['productName'] },
  { label: 'Product UUID', keys: ['productUuid'] },
  { label: 'Product serial', keys: ['productSerial'] },
  { label: 'Board serial', keys: ['boardSerial'] },
  { label: 'Chassis serial', keys: ['chassisSerial'] },
  { label: 'MAC addresses', keys: ['macs'], isList: true },
  { label: 'GPUs', keys: ['gpuUuids'], isList: true },
];
const SHOWN = new Set(INVENTORY.flatMap((row) => row.keys));

/** The machine's claims at its last join as a hardware inventory: identifiers, then NICs and GPUs, then anything else. */
export function NodeInventory({ claims }: { claims: NodeDetail['claims'] }) {
  const rows = INVENTORY.map((row) => ({ ...row, values: row.keys.flatMap((key) => valuesOf(claims[key])) })).filter(
    (row) => row.values.length > 0,
  );
  const others = Object.entries(claims).filter(([key, value]) => !SHOWN.has(key) && valuesOf(value).length > 0);
  if (!rows.length && !others.length) return <p className="panel-empty">The machine claimed nothing when it joined.</p>;
  return (
    <dl className="details panel-body" data-testid="node-inventory">
      {rows.map((row) => (
        <div key={row.label}>
          <dt>
            {row.label}
            {row.isList && ` (${row.values.length})`}
          </dt>
          <dd>
            {row.isList ? (
              <ul className="plain-list">
                {row.values.map((value) => (
                  <li key={value}>
                    <code>{value}</code>
                  </li>
                ))}
              </ul>
            ) : (
              <code>{row.values[0]}</code>
            )}
          </dd>
        </div>
      ))}
      {others.map(([key, value]) => (
        <div key={key}>
          <dt>{key}</dt>
          <dd>{valuesOf(value).join(', ')}</dd>
        </div>
      ))}
    </dl>
  );
}
