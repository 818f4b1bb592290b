import type { z } from 'zod';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { WEBHOOK_EVENT_TYPES } from '../events/event-types';
import { publishEvent, writeAudit } from '../events/publish';
import { allowsPrivateTargets } from './config';
import type { createWebhookInput, listWebhooksInput, updateWebhookInput, webhookRef } from './schemas';
import type { WebhookRecord } from '../../protocol/api/webhook-schemas';
import { newWebhookSecret, sealWebhookSecret, serverSecrets } from './secret';
import { checkWebhookUrl } from './target';

type Row = {
  id: string;
  tenantId: string;
  url: string;
  description: string;
  eventTypes: string[];
  enabled: boolean;
  disabledReason: string | null;
  consecutiveFailures: number;
  failingSince: Date | null;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
};

const toWebhookRecord = (r: Row): WebhookRecord => ({
  id: r.id,
  tenantId: r.tenantId,
  url: r.url,
  description: r.description,
  eventTypes: r.eventTypes,
  enabled: r.enabled,
  disabledReason: r.disabledReason,
  consecutiveFailures: r.consecutiveFailures,
  failingSince: r.failingSince?.toISOString() ?? null,
  createdBy: r.createdBy,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

const select = {
  id: true,
  tenantId: true,
  url: true,
  description: true,
  eventTypes: true,
  enabled: true,
  disabledReason: true,
  consecutiveFailures: true,
  failingSince: true,
  createdBy: true,
  createdAt: true,
  updatedAt: true,
} as const;

/** The subscription `webhookId` of `tenantId`, locked for the transaction; NOT_FOUND for another tenant's. */
async function lockWebhook(tx: Tx, tenantId: string, webhookId: string): Promise<Row> {
  const locked = await typed(tx)
    .selectFrom('webhook_subscriptions')
    .select('id')
    .where('id', '=', webhookId)
    .where('tenant_id', '=', tenantId)
    .forUpdate()
    .execute();
  if (!locked.length) throw new DomainError('NOT_FOUND', `Webhook ${webhookId} not found`);
  return tx.webhookSubscription.findUniqueOrThrow({ where: { id: webhookId }, select });
}

const auditAndPublish = async (tx: Tx, principal: Principal, row: Row, what: string, data: Record<string, unknown> = {}) => {
  const facts = { webhookId: row.id, url: row.url, eventTypes: row.eventTypes, enabled: row.enabled, ...data };
  await writeAudit(tx, {
    tenantId: row.tenantId,
    actor: principal.actor,
    action: `webhook.${what}`,
    resource: `compute-webhook/${row.id}`,
    data: facts,
  });
  await publishEvent(tx, { tenantId: row.tenantId, type: `webhook.subscription.${what}`, data: { ...facts, actor: principal.actor } });
};

/**
 * Creates a subscription (`compute:webhooks:manage`) with a new signing secret, returned this once and kept
 * only sealed under BETTER_COMPUTE_SECRET. The URL is checked here for its form and, without
 * BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE, for a non-public address literal; every delivery checks it again.
 */
export async function createWebhook(db: Db, principal: Principal, input: z.infer<typeof createWebhookInput>) {
  await authorize(db, principal, 'compute:webhooks:manage', resource.tenant(input.tenantId));
  const url = checkWebhookUrl(input.url, allowsPrivateTargets()).toString();
  const id = newId('wh');
  const secret = newWebhookSecret();
  const sealedSecret = sealWebhookSecret(secret, id, serverSecrets()[0]!);
  return db.$transaction(async (tx) => {
    const row = await tx.webhookSubscription.create({
      data: {
        id,
        tenantId: input.tenantId,
        url,
        description: input.description ?? '',
        eventTypes: input.eventTypes,
        enabled: input.enabled ?? true,
        sealedSecret: new Uint8Array(sealedSecret),
        createdBy: principal.actor,
      },
      select,
    });
    await auditAndPublish(tx, principal, row, 'created');
    return { ...toWebhookRecord(row), secret };
  });
}

/** The event types a subscription of this tenant may name (the same for every tenant, decided like a list). */
export async function listWebhookEventTypes(db: Db, principal: Principal, input: z.infer<typeof listWebhooksInput>): Promise<string[]> {
  await authorize(db, principal, 'compute:webhooks:read', resource.tenant(input.tenantId));
  return [...WEBHOOK_EVENT_TYPES];
}

export async function listWebhooks(db: Db, principal: Principal, input: z.infer<typeof listWebhooksInput>): Promise<WebhookRecord[]> {
  await authorize(db, principal, 'compute:webhooks:read', resource.tenant(input.tenantId));
  const rows = await db.webhookSubscription.findMany({ where: { tenantId: input.tenantId }, select, orderBy: { createdAt: 'asc' } });
  return rows.map(toWebhookRecord);
}

export async function getWebhook(db: Db, principal: Principal, input: z.infer<typeof webhookRef>): Promise<WebhookRecord> {
  await authorize(db, principal, 'compute:webhooks:read', resource.tenant(input.tenantId));
  const row = await db.webhookSubscription.findFirst({ where: { id: input.webhookId, tenantId: input.tenantId }, select });
  if (!row) throw new DomainError('NOT_FOUND', `Webhook ${input.webhookId} not found`);
  return toWebhookRecord(row);
}

/** Changes the URL, the event types, the description or enabled; enabling clears the run of failures. */
export async function updateWebhook(db: Db, principal: Principal, input: z.infer<typeof updateWebhookInput>): Promise<WebhookRecord> {
  await authorize(db, principal, 'compute:webhooks:manage', resource.tenant(input.tenantId));
  const url = input.url === undefined ? undefined : checkWebhookUrl(input.url, allowsPrivateTargets()).toString();
  return db.$transaction(async (tx) => {
    const before = await lockWebhook(tx, input.tenantId, input.webhookId);
    const enabling = input.enabled === true && !before.enabled;
    const row = await tx.webhookSubscription.update({
      where: { id: before.id },
      data: {
        url,
        eventTypes: input.eventTypes,
        description: input.description,
        enabled: input.enabled,
        updatedAt: new Date(),
        ...(enabling ? { consecutiveFailures: 0, failingSince: null, disabledReason: null } : {}),
        ...(input.enabled === false ? { disabledReason: null } : {}),
      },
      select,
    });
    await auditAndPublish(tx, principal, row, 'updated', {
      changed: Object.keys(input).filter((k) => k !== 'tenantId' && k !== 'webhookId'),
    });
    return toWebhookRecord(row);
  });
}

/** Deletes a subscription and its deliveries (pending ones are never sent). */
export async function deleteWebhook(db: Db, principal: Principal, input: z.infer<typeof webhookRef>): Promise<WebhookRecord> {
  await authorize(db, principal, 'compute:webhooks:manage', resource.tenant(input.tenantId));
  return db.$transaction(async (tx) => {
    const row = await lockWebhook(tx, input.tenantId, input.webhookId);
    await tx.webhookSubscription.delete({ where: { id: row.id } });
    await auditAndPublish(tx, principal, row, 'deleted');
    return toWebhookRecord(row);
  });
}

/**
 * Replaces the signing secret with a new one, returned this once. Attempts from then on (retries of earlier
 * deliveries too) are signed with the new secret.
 */
export async function rotateWebhookSecret(db: Db, principal: Principal, input: z.infer<typeof webhookRef>) {
  await authorize(db, principal, 'compute:webhooks:manage', resource.tenant(input.tenantId));
  const secret = newWebhookSecret();
  const sealedSecret = sealWebhookSecret(secret, input.webhookId, serverSecrets()[0]!);
  return db.$transaction(async (tx) => {
    await lockWebhook(tx, input.tenantId, input.webhookId);
    const row = await tx.webhookSubscription.update({
      where: { id: input.webhookId },
      data: { sealedSecret: new Uint8Array(sealedSecret), updatedAt: new Date() },
      select,
    });
    await auditAndPublish(tx, principal, row, 'secret-rotated');
    return { ...toWebhookRecord(row), secret };
  });
}
