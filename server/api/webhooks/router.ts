import { router } from '../trpc';
import { domainList, domainMutation, domainQuery } from '../domain-procedure';
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
  eventTypes: domainList('compute:webhooks:read', listWebhooksInput, webhookEventTypeList, listWebhookEventTypes),
  create: domainMutation('compute:webhooks:manage', createWebhookInput, webhookWithSecret, createWebhook),
  list: domainList('compute:webhooks:read', listWebhooksInput, webhookList, listWebhooks),
  get: domainQuery('compute:webhooks:read', webhookRef, webhookRecord, getWebhook),
  update: domainMutation('compute:webhooks:manage', updateWebhookInput, webhookRecord, updateWebhook),
  delete: domainMutation('compute:webhooks:manage', webhookRef, webhookRecord, deleteWebhook),
  rotateSecret: domainMutation('compute:webhooks:manage', webhookRef, webhookWithSecret, rotateWebhookSecret),
  test: domainMutation('compute:webhooks:manage', webhookRef, deliveryRecord, sendTestWebhook),
  deliveries: domainList('compute:webhooks:read', listDeliveriesInput, deliveryList, listDeliveries),
  redeliver: domainMutation('compute:webhooks:manage', redeliverInput, deliveryRecord, redeliver),
});
