import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { sql } from 'kysely';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { WEBHOOK_TEST_EVENT_TYPE } from '../events/event-types';
import type { listDeliveriesInput, redeliverInput, webhookRef } from './schemas';
import type { DeliveryRecord } from '../../protocol/api/webhook-schemas';

/** The channel the outbox trigger and these functions NOTIFY; every instance's delivery worker LISTENs. */
export const WEBHOOK_DELIVERIES_CHANNEL = 'compute_webhook_deliveries';

type Row = {
  id: string;
  subscriptionId: string;
  eventType: string;
  eventId: bigint | null;
  state: string;
  attempts: number;
  createdAt: Date;
  nextAttemptAt: Date;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastLatencyMs: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
};

const toRecord = (r: Row): DeliveryRecord => ({
  id: r.id,
  webhookId: r.subscriptionId,
  eventType: r.eventType,
  eventId: r.eventId === null ? null : String(r.eventId),
  state: r.state as DeliveryRecord['state'],
  attempts: r.attempts,
  createdAt: r.createdAt.toISOString(),
  nextAttemptAt: r.state === 'pending' ? r.nextAttemptAt.toISOString() : null,
  lastAttemptAt: r.lastAttemptAt?.toISOString() ?? null,
  lastStatus: r.lastStatus,
  lastLatencyMs: r.lastLatencyMs,
  lastError: r.lastError,
  deliveredAt: r.deliveredAt?.toISOString() ?? null,
});

/**
 * Wakes every instance's delivery worker when the transaction commits. `pg_notify` answers `void`, a type
 * Prisma's driver cannot read back, hence the cast.
 */
const notifyWorkers = (tx: Tx) =>
  typed(tx)
    .selectNoFrom(sql<string>`pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, '')::text`.as('notified'))
    .execute();

/** Wakes the workers for a queued delivery, and audits `action` on its webhook naming the delivery. */
async function announceDelivery(
  tx: Tx,
  principal: Principal,
  action: 'webhook.redelivered' | 'webhook.tested',
  delivery: { tenantId: string; webhookId: string; deliveryId: string },
) {
  await notifyWorkers(tx);
  await writeAudit(tx, {
    tenantId: delivery.tenantId,
    actor: principal.actor,
    action,
    resource: `compute-webhook/${delivery.webhookId}`,
    data: { deliveryId: delivery.deliveryId },
  });
}

const omitBody = { body: false, tenantId: false, retryFrom: false } as const;

async function ownWebhook(db: Db, tenantId: string, webhookId: string) {
  const sub = await db.webhookSubscription.findFirst({
    where: { id: webhookId, tenantId },
    select: { id: true, enabled: true, url: true },
  });
  if (!sub) throw new DomainError('NOT_FOUND', `Webhook ${webhookId} not found`);
  return sub;
}

/** A subscription's deliveries, newest first (100 unless `limit` says otherwise). */
export async function listDeliveries(db: Db, principal: Principal, input: z.infer<typeof listDeliveriesInput>): Promise<DeliveryRecord[]> {
  await authorize(db, principal, 'compute:webhooks:read', resource.tenant(input.tenantId));
  await ownWebhook(db, input.tenantId, input.webhookId);
  const rows = await db.webhookDelivery.findMany({
    where: { subscriptionId: input.webhookId, ...(input.state ? { state: input.state } : {}) },
    omit: omitBody,
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: input.limit ?? 100,
  });
  return rows.map(toRecord);
}

/**
 * Sends the delivery again now, under the same `webhook-id`, with a new retry window; a pending one is
 * simply made due. The body is the one first recorded.
 */
export async function redeliver(db: Db, principal: Principal, input: z.infer<typeof redeliverInput>): Promise<DeliveryRecord> {
  await authorize(db, principal, 'compute:webhooks:manage', resource.tenant(input.tenantId));
  await ownWebhook(db, input.tenantId, input.webhookId);
  return db.$transaction(async (tx) => {
    const updated = await typed(tx)
      .updateTable('webhook_deliveries')
      .set({ state: 'pending', next_attempt_at: sql`now()`, retry_from: sql`now()` })
      .where('id', '=', input.deliveryId)
      .where('subscription_id', '=', input.webhookId)
      .executeTakeFirst();
    if (!updated.numUpdatedRows) throw new DomainError('NOT_FOUND', `Delivery ${input.deliveryId} not found`);
    await announceDelivery(tx, principal, 'webhook.redelivered', input);
    return toRecord(await tx.webhookDelivery.findUniqueOrThrow({ where: { id: input.deliveryId }, omit: omitBody }));
  });
}

/**
 * Queues a `webhook.test` delivery to this one subscription, whatever event types it names, so an admin can
 * check the receiver and its signature check. It is signed, retried and listed like any delivery.
 */
export async function sendTestWebhook(db: Db, principal: Principal, input: z.infer<typeof webhookRef>): Promise<DeliveryRecord> {
  await authorize(db, principal, 'compute:webhooks:manage', resource.tenant(input.tenantId));
  const sub = await ownWebhook(db, input.tenantId, input.webhookId);
  if (!sub.enabled) throw new DomainError('INVALID_STATE', `Webhook ${input.webhookId} is disabled: enable it to send a test event`);
  const id = `msg_${randomUUID().replaceAll('-', '')}`;
  return db.$transaction(async (tx) => {
    const { now } = await typed(tx)
      .selectNoFrom(sql<Date>`now()`.as('now'))
      .executeTakeFirstOrThrow();
    const timestamp = now.toISOString();
    const body = JSON.stringify({
      type: WEBHOOK_TEST_EVENT_TYPE,
      timestamp,
      data: { webhookId: sub.id, tenantId: input.tenantId, requestedBy: principal.actor },
    });
    const row = await tx.webhookDelivery.create({
      data: { id, subscriptionId: sub.id, tenantId: input.tenantId, eventType: WEBHOOK_TEST_EVENT_TYPE, body },
      omit: omitBody,
    });
    await announceDelivery(tx, principal, 'webhook.tested', { tenantId: input.tenantId, webhookId: sub.id, deliveryId: id });
    return toRecord(row);
  });
}
