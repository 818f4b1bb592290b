import { z } from 'zod';

/** A webhook subscription as the API answers it (`webhooks.*`). */
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
export const webhookList = z.object({ items: z.array(webhookRecord) });

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;

/** One delivery of a webhook as the API answers it. */
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
export const deliveryList = z.object({ items: z.array(deliveryRecord) });
/** `webhooks.eventTypes`: the event types a subscription may name. */
export const webhookEventTypeList = z.object({ items: z.array(z.string()) });
