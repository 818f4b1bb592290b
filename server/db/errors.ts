/** True when a write failed on a unique constraint (Prisma P2002, or PostgreSQL 23505 through the adapter). */
export function isUniqueViolation(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; e && depth < 5; depth++) {
    const record = e as { code?: unknown; cause?: unknown; originalCode?: unknown };
    if (record.code === 'P2002' || record.code === '23505' || record.originalCode === '23505') return true;
    e = record.cause;
  }
  return false;
}
