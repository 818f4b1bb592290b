import { describe, expect, it } from 'vitest';
import { publishedTypes } from '../../test/published-event-types';
import { EVENT_TYPES } from './events-view';

describe('the events page type filter', () => {
  it('offers every node.* and security.* event type the server publishes', () => {
    const published = publishedTypes();
    expect(published.size).toBeGreaterThan(10);
    expect([...published].filter((type) => !(EVENT_TYPES as readonly string[]).includes(type)).sort()).toEqual([]);
  });

  it('lists each type once', () => {
    const seen = new Set<string>();
    const repeated = EVENT_TYPES.filter((type) => seen.size === seen.add(type).size);
    expect(repeated).toEqual([]);
  });
});
