import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WEBHOOK_EVENT_TYPES } from '../../server/events/event-types';
import { EVENT_TYPES } from './events-view';

/** Every `.ts` file of the server (not tests, not the generated client). */
function serverSources(dir = path.join(__dirname, '../../server')): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return name === 'generated' ? [] : serverSources(file);
    return file.endsWith('.ts') && !file.endsWith('.test.ts') ? [file] : [];
  });
}

// String literals of this shape that are not event types: file names of the agent's key, and audit actions
// that publish no event (a recheck publishes node.acceptance.started).
const NOT_EVENTS = new Set(['node.key', 'node.key.previous', 'node.rechecked']);

function publishedTypes(): Set<string> {
  const published = new Set<string>();
  for (const file of serverSources()) {
    for (const [, type] of readFileSync(file, 'utf8').matchAll(/['`]((?:node|security)\.[a-z][a-z.-]*[a-z])['`]/g)) if (!NOT_EVENTS.has(type!)) published.add(type!);
    // `security.join-request.${decision}`: the decisions are approved and rejected.
    if (readFileSync(file, 'utf8').includes('`security.join-request.${decision}`')) ['security.join-request.approved', 'security.join-request.rejected'].forEach((t) => published.add(t));
  }
  return published;
}

describe('the events page type filter', () => {
  it('offers every node.* and security.* event type the server publishes', () => {
    const published = publishedTypes();
    expect(published.size).toBeGreaterThan(10);
    expect([...published].filter((type) => !(EVENT_TYPES as readonly string[]).includes(type)).sort()).toEqual([]);
  });

  it('lets a webhook subscribe to every one of them', () => {
    // node.reclaimed is an audit action of a join that reclaims a machine (its event is node.joined).
    const published = [...publishedTypes()].filter((type) => type !== 'node.reclaimed');
    expect(published.filter((type) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type)).sort()).toEqual([]);
  });
});
