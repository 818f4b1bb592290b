/**
 * The event types a webhook subscription may name: the product's own events (written to `events` by the
 * join, the queue, nodes, sessions and the token and certificate paths) and the webhook's own. A rate-limited
 * event (`security.join.refused`, `node.join-request.created`) is delivered only when it was recorded.
 */
export const WEBHOOK_EVENT_TYPES = [
  'node.join-request.created',
  'node.join-request.auto-admitted',
  'node.join-request.expired',
  'node.join-request.approval-recorded',
  'security.join-request.approved',
  'security.join-request.rejected',
  'security.join.refused',
  'node.joined',
  'node.adopted',
  'node.acceptance.started',
  'node.acceptance.passed',
  'node.acceptance.failed',
  'node.connected',
  'node.disconnected',
  'node.cordoned',
  'node.uncordoned',
  'node.labels-changed',
  'node.identity-revoked',
  'node.deleted',
  'node.stale.cordoned',
  'node.stale.retired',
  'security.certificate-revoked',
  'security.renew.refused',
  'security.session.refused',
  'security.site-agent.refused',
  'node.command.enqueued',
  'node.command.finished',
  'security.command.refused',
  'security.command.result-refused',
  'security.join-token.created',
  'security.join-token.revoked',
  'security.pki.rotation.prepared',
  'security.pki.rotation.activated',
  'security.pki.rotation.retired',
  'webhook.subscription.disabled',
] as const;

/** The type of the payload `webhooks.test` sends to one subscription, whatever types it names. */
export const WEBHOOK_TEST_EVENT_TYPE = 'webhook.test';
