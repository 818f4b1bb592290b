/**
 * Reads the user data `renderCloudConfig` writes (server/provisioning/cloud-config.ts): `#cloud-config`, then
 * top-level keys whose list items are each one JSON value on one line (JSON is YAML 1.2, so this is the YAML a
 * cloud-init reads). Throws on any line that is not of that shape.
 */
export function parseCloudConfig(text: string): Record<string, unknown[]> {
  const [first, ...lines] = text.split('\n');
  if (first !== '#cloud-config') throw new Error('user data must start with #cloud-config');
  const doc: Record<string, unknown[]> = {};
  let key: string | null = null;
  for (const line of lines) {
    if (line === '' || line.startsWith('#')) continue;
    const top = /^([a-z_]+):$/.exec(line);
    if (top) {
      key = top[1]!;
      doc[key] = [];
      continue;
    }
    if (!key || !line.startsWith('  - ')) throw new Error(`unexpected line in user data: ${line}`);
    doc[key]!.push(JSON.parse(line.slice(4)));
  }
  return doc;
}

export interface WrittenFile {
  path: string;
  owner?: string;
  permissions?: string;
  content: string;
}
