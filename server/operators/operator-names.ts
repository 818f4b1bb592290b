import type { Db } from '../db/client';

/**
 * How the console names the operators among `actors` (`operator:op_…`): actor → name, else email, in one
 * query, so lists show people, never ids. Other actors (API keys, `local:…`) and removed operators are absent.
 */
export async function operatorNames(db: Db, actors: Iterable<string>): Promise<Map<string, string>> {
  const ids = [...new Set([...actors].filter((a) => a.startsWith('operator:')).map((a) => a.slice('operator:'.length)))];
  if (!ids.length) return new Map();
  const rows = await db.operator.findMany({ where: { id: { in: ids } }, select: { id: true, name: true, email: true } });
  return new Map(rows.map((o) => [`operator:${o.id}`, o.name.trim() || o.email]));
}
