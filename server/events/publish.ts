import type { Tx } from '../db/client';

/** Publishes an event to one tenant's stream. `data` must never hold a secret: callers pass hashes only. */
export async function publishEvent(tx: Tx, event: { tenantId: string; type: string; data: Record<string, unknown> }) {
  await tx.event.create({ data: { tenantId: event.tenantId, type: event.type, data: event.data as object } });
}

/** Writes an audit row naming the caller. */
export async function writeAudit(
  tx: Tx,
  entry: { tenantId: string; actor: string; action: string; resource: string; data?: Record<string, unknown> },
) {
  await tx.auditEntry.create({
    data: {
      tenantId: entry.tenantId,
      actor: entry.actor,
      action: entry.action,
      resource: entry.resource,
      data: (entry.data ?? {}) as object,
    },
  });
}
