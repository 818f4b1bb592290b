import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '../events/event-types';
import { idOf } from '../../protocol/api/resource-names';
import { MAX_WEBHOOK_URL_LENGTH } from './target';
import { DELIVERY_STATES } from '../../protocol/api/webhook-schemas';

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
