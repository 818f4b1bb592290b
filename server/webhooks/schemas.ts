import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '../events/event-types';
import { idOf } from '../../protocol/api/resource-names';
import { MAX_WEBHOOK_URL_LENGTH } from './target';

const eventTypes = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1, 'name at least one event type')
  .max(WEBHOOK_EVENT_TYPES.length)
  .transform((types) => [...new Set(types)]);
const url = z.string().trim().min(1).max(MAX_WEBHOOK_URL_LENGTH);
const description = z.string().trim().max(200);

export const createWebhookInput = z.strictObject({
  tenantId: idOf('tnt'),
  url,
  eventTypes,
  description: description.optional(),
  enabled: z.boolean().optional(),
});
export const updateWebhookInput = z.strictObject({
  tenantId: idOf('tnt'),
  webhookId: idOf('wh'),
  url: url.optional(),
  eventTypes: eventTypes.optional(),
  description: description.optional(),
  /** Enabling a disabled subscription clears its run of failures. */
  enabled: z.boolean().optional(),
});
export const webhookRef = z.strictObject({ tenantId: idOf('tnt'), webhookId: idOf('wh') });
export const listWebhooksInput = z.strictObject({ tenantId: idOf('tnt') });

export const webhookRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  url: z.string(),
  description: z.string(),
  eventTypes: z.array(z.string()),
  enabled: z.boolean(),
  /** Why the server disabled it (persistent failure), null when it is enabled or an admin disabled it. */
  disabledReason: z.string().nullable(),
  consecutiveFailures: z.number().int(),
  failingSince: z.string().nullable(),
  createdBy: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WebhookRecord = z.infer<typeof webhookRecord>;
/** A create or a rotation: the record and the signing secret, shown this once. */
export const webhookWithSecret = webhookRecord.extend({ secret: z.string() });

const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export const listDeliveriesInput = z.strictObject({
  tenantId: idOf('tnt'),
  webhookId: idOf('wh'),
  state: z.enum(DELIVERY_STATES).optional(),
  limit: z.number().int().min(1).max(500).optional(),
});
export const redeliverInput = z.strictObject({
  tenantId: idOf('tnt'),
  webhookId: idOf('wh'),
  deliveryId: z.string().regex(/^msg_[0-9a-f]{32}$/, 'expected a msg_… id'),
});

export const deliveryRecord = z.object({
  id: z.string(),
  webhookId: z.string(),
  eventType: z.string(),
  eventId: z.string().nullable(),
  state: z.enum(DELIVERY_STATES),
  attempts: z.number().int(),
  createdAt: z.string(),
  /** When the next attempt is due; null once delivered or failed. */
  nextAttemptAt: z.string().nullable(),
  lastAttemptAt: z.string().nullable(),
  lastStatus: z.number().int().nullable(),
  lastLatencyMs: z.number().int().nullable(),
  lastError: z.string().nullable(),
  deliveredAt: z.string().nullable(),
});
export type DeliveryRecord = z.infer<typeof deliveryRecord>;
