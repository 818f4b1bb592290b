import { describe, expect, it } from 'vitest';
import { publishedTypes } from '../../test/published-event-types';
import { WEBHOOK_EVENT_TYPES } from './event-types';

describe('webhook event types', () => {
  it('let a webhook subscribe to every node.* and security.* event type the server publishes', () => {
    // node.reclaimed is an audit action of a join that reclaims a machine (its event is node.joined).
    const published = [...publishedTypes()].filter((type) => type !== 'node.reclaimed');
    expect(published.length).toBeGreaterThan(10);
    expect(published.filter((type) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type)).sort()).toEqual([]);
  });
});
