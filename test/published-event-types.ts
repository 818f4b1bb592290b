import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Every `.ts` file of the server (not tests, not the generated client). */
function serverSources(dir = path.join(__dirname, '../server')): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return name === 'generated' ? [] : serverSources(file);
    return file.endsWith('.ts') && !file.endsWith('.test.ts') ? [file] : [];
  });
}

// String literals of this shape that are not event types: file names of the agent's key, and audit actions
// that publish no event (a recheck publishes node.acceptance.started).
const NOT_EVENTS = new Set(['node.key', 'node.key.previous', 'node.rechecked']);

/** The node.* and security.* event types the server's sources publish (a scan of its string literals). */
export function publishedTypes(): Set<string> {
  const published = new Set<string>();
  for (const file of serverSources()) {
    for (const [, type] of readFileSync(file, 'utf8').matchAll(/['`]((?:node|security)\.[a-z][a-z.-]*[a-z])['`]/g))
      if (!NOT_EVENTS.has(type!)) published.add(type!);
    // `security.join-request.${decision}`: the decisions are approved and rejected.
    if (readFileSync(file, 'utf8').includes('`security.join-request.${decision}`'))
      ['security.join-request.approved', 'security.join-request.rejected'].forEach((t) => published.add(t));
  }
  return published;
}
