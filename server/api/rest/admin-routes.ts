import { PREPARE_MAX_BODY_BYTES } from '../../../protocol/api/pki-rotation-schemas';
import { restRoutes, T } from './route-table';

/** Administration: operators, invitations, webhooks and the PKI's key rotation. */
export const ADMIN_ROUTES = restRoutes([
  { method: 'GET', path: `${T}/operators`, procedure: 'operators.list', summary: "List a tenant's operators (admins)" },
  {
    method: 'POST',
    path: `${T}/operators/{operatorId}/role`,
    procedure: 'operators.setRole',
    summary: "Change an operator's role (the last admin stays admin)",
  },
  {
    method: 'POST',
    path: `${T}/operators/{operatorId}/remove`,
    procedure: 'operators.remove',
    summary: 'Remove an operator from the tenant and end their sessions',
  },
  { method: 'GET', path: `${T}/invitations`, procedure: 'invitations.list', summary: "List a tenant's pending invitations" },
  {
    method: 'POST',
    path: `${T}/invitations`,
    procedure: 'invitations.create',
    summary: 'Invite an operator by email (the one-time token is shown once)',
  },
  {
    method: 'POST',
    path: `${T}/invitations/{invitationId}/revoke`,
    procedure: 'invitations.revoke',
    summary: 'Revoke a pending invitation',
  },
  { method: 'GET', path: `${T}/webhooks`, procedure: 'webhooks.list', summary: "List a tenant's webhook subscriptions (admins)" },
  {
    method: 'POST',
    path: `${T}/webhooks`,
    procedure: 'webhooks.create',
    summary: 'Create a webhook subscription (its signing secret is shown once)',
  },
  {
    method: 'GET',
    path: `${T}/webhooks/event-types`,
    procedure: 'webhooks.eventTypes',
    summary: 'The event types a webhook subscription may name',
  },
  { method: 'GET', path: `${T}/webhooks/{webhookId}`, procedure: 'webhooks.get', summary: 'Get a webhook subscription' },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/update`,
    procedure: 'webhooks.update',
    summary: "Change a webhook's URL, event types, description or enabled",
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/delete`,
    procedure: 'webhooks.delete',
    summary: 'Delete a webhook subscription and its deliveries',
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/rotate-secret`,
    procedure: 'webhooks.rotateSecret',
    summary: "Replace a webhook's signing secret (the new one is shown once)",
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/test`,
    procedure: 'webhooks.test',
    summary: 'Send a signed webhook.test event to the subscription',
  },
  {
    method: 'GET',
    path: `${T}/webhooks/{webhookId}/deliveries`,
    procedure: 'webhooks.deliveries',
    summary: "List a webhook's deliveries, newest first",
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver`,
    procedure: 'webhooks.redeliver',
    summary: 'Send a delivery again, under the same webhook-id',
  },
  {
    method: 'GET',
    path: '/v1/pki/rotation',
    procedure: 'pki.rotation.status',
    summary: "Each PKI key's rotation phase, pins and readiness (root admins)",
  },
  {
    method: 'POST',
    path: '/v1/pki/rotation/{kind}/prepare',
    procedure: 'pki.rotation.prepare',
    summary: 'Prepare the next key of a kind: made by the server, or imported (root admins)',
    maxBodyBytes: PREPARE_MAX_BODY_BYTES,
  },
  {
    method: 'POST',
    path: '/v1/pki/rotation/{kind}/activate',
    procedure: 'pki.rotation.activate',
    summary: 'Put the prepared key of a kind in use; the previous stays trusted (root admins)',
  },
  {
    method: 'POST',
    path: '/v1/pki/rotation/{kind}/retire',
    procedure: 'pki.rotation.retire',
    summary: 'Stop trusting the previous key of a kind (root admins)',
  },
]);
