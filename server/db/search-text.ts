import { Prisma } from './generated/client';

/** `%`, `_` and `\` stand for themselves in the search text. */
export const likeEscape = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A MAC in Cisco's dotted form (`3cec.ef12.3456`). */
const DOTTED_MAC = /^[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}$/;

/**
 * The patterns a search for `search` tries on a generated, lower-case search-text column (the join-request
 * queue's, the node list's): the text as typed, and, when it reads as hex digits with `:`/`-` separators (or
 * Cisco's dots), those digits bare, so `3c:ec:ef`, `3C-EC-EF` and `3cec.ef..` all match the bare MAC the
 * column also holds.
 */
export function searchPatterns(search: string): string[] {
  const text = search.toLowerCase();
  const bare = DOTTED_MAC.test(text) ? text.replace(/\./g, '') : text.replace(/[:-]/g, '');
  const alternatives = new Set([text, bare.length >= 2 && /^[0-9a-f]+$/.test(bare) ? bare : text]);
  return [...alternatives].map((a) => `%${likeEscape(a)}%`);
}

/**
 * `column LIKE ANY(patterns)`: the searched text is read once per row whatever the number of alternatives, and a
 * trigram index on the column answers it (a bitmap scan per pattern).
 */
export function searchTextMatch(column: Prisma.Sql, search: string): Prisma.Sql {
  return Prisma.sql`${column} LIKE ANY(${searchPatterns(search)}::text[])`;
}
