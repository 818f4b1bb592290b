import { requirePermission, router } from '../trpc';
import { listDeliveries, redeliver, sendTestWebhook } from '../../webhooks/deliveries';
import {
  createWebhookInput,
  listDeliveriesInput,
  listWebhooksInput,
  redeliverInput,
  updateWebhookInput,
  webhookRef,
} from '../../webhooks/schemas';
import {
  deliveryList,
  deliveryRecord,
  webhookEventTypeList,
  webhookList,
  webhookRecord,
  webhookWithSecret,
} from '../../../protocol/api/webhook-schemas';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhookEventTypes,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
} from '../../webhooks/subscriptions';

/** Webhook subscriptions and their deliveries: admins only (`compute:webhooks:read|manage`). */
export const webhooksRouter = router({
  eventTypes: requirePermission('compute:webhooks:read')
    .input(listWebhooksInput)
    .output(webhookEventTypeList)
    .query(async ({ ctx, input }) => ({ items: await listWebhookEventTypes(ctx.db, ctx.principal, input) })),
  create: requirePermission('compute:webhooks:manage')
    .input(createWebhookInput)
    .output(webhookWithSecret)
    .mutation(({ ctx, input }) => createWebhook(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:webhooks:read')
    .input(listWebhooksInput)
    .output(webhookList)
    .query(async ({ ctx, input }) => ({ items: await listWebhooks(ctx.db, ctx.principal, input) })),
  get: requirePermission('compute:webhooks:read')
    .input(webhookRef)
    .output(webhookRecord)
    .query(({ ctx, input }) => getWebhook(ctx.db, ctx.principal, input)),
  update: requirePermission('compute:webhooks:manage')
    .input(updateWebhookInput)
    .output(webhookRecord)
    .mutation(({ ctx, input }) => updateWebhook(ctx.db, ctx.principal, input)),
  delete: requirePermission('compute:webhooks:manage')
    .input(webhookRef)
    .output(webhookRecord)
    .mutation(({ ctx, input }) => deleteWebhook(ctx.db, ctx.principal, input)),
  rotateSecret: requirePermission('compute:webhooks:manage')
    .input(webhookRef)
    .output(webhookWithSecret)
    .mutation(({ ctx, input }) => rotateWebhookSecret(ctx.db, ctx.principal, input)),
  test: requirePermission('compute:webhooks:manage')
    .input(webhookRef)
    .output(deliveryRecord)
    .mutation(({ ctx, input }) => sendTestWebhook(ctx.db, ctx.principal, input)),
  deliveries: requirePermission('compute:webhooks:read')
    .input(listDeliveriesInput)
    .output(deliveryList)
    .query(async ({ ctx, input }) => ({ items: await listDeliveries(ctx.db, ctx.principal, input) })),
  redeliver: requirePermission('compute:webhooks:manage')
    .input(redeliverInput)
    .output(deliveryRecord)
    .mutation(({ ctx, input }) => redeliver(ctx.db, ctx.principal, input)),
});
