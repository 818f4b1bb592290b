import { type Command, InvalidArgumentError } from 'commander';
import { WEBHOOK_EVENT_TYPES } from '../../server/events/event-types';
import type { WebhookRecord } from '../../protocol/api/webhook-schemas';
import { enc } from '../client';
import { tenantClientFor } from '../context';
import { wholeNumber } from '../options';
import { printJson, printRows } from '../output';
import { writeNewSecretFile } from '../secret-file';

const eventTypes = (value: string): string[] => {
  const types = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (!types.length || unknown.length)
    throw new InvalidArgumentError(
      `unknown event type ${unknown.join(', ') || '(none)'}; use comma-separated names of: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
    );
  return types;
};
const onOff = (value: string): boolean => {
  if (value === 'true' || value === 'on') return true;
  if (value === 'false' || value === 'off') return false;
  throw new InvalidArgumentError('use true or false');
};

type WithSecret = WebhookRecord & { secret: string };

/** The client and the REST path of the tenant's webhooks. */
async function webhooksOf(cmd: Command, tenant: string) {
  const { client, tenantPath } = await tenantClientFor(cmd, tenant);
  return { client, base: `${tenantPath}/webhooks` };
}

function printSecret(created: WithSecret, out: string | undefined, json: boolean | undefined, verb: string) {
  const { secret, ...record } = created;
  if (json) printJson(out ? record : created);
  else if (out) process.stdout.write(`${verb} webhook ${record.id}; its signing secret is written to ${out}\n`);
  else process.stdout.write(`${verb} webhook ${record.id}. Its signing secret is shown only once:\n${secret}\n`);
}

export function registerWebhookCommands(program: Command) {
  const webhooks = program
    .command('webhooks')
    .description('Signed webhook subscriptions (Standard Webhooks) and their deliveries (admins)');
  webhooks
    .command('create')
    .description('Subscribe a URL to event types; the signing secret is shown (or written to --out) once')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .requiredOption('--url <url>', 'the receiver, https:// or http://')
    .requiredOption('--events <types>', 'comma-separated event types (see `webhooks event-types`)', eventTypes)
    .option('--description <text>', 'a label')
    .option('--disabled', 'create it disabled')
    .option('--out <file>', 'write the signing secret to a new 0600 file instead of printing it')
    .option('--json', 'print the record as JSON')
    .action(
      async (
        opts: { tenant: string; url: string; events: string[]; description?: string; disabled?: boolean; out?: string; json?: boolean },
        cmd: Command,
      ) => {
        const { client, base } = await webhooksOf(cmd, opts.tenant);
        const create = () =>
          client.post('webhooks.create', base, {
            url: opts.url,
            eventTypes: opts.events,
            description: opts.description,
            enabled: opts.disabled ? false : undefined,
          });
        let created: WithSecret | undefined;
        if (opts.out) await writeNewSecretFile(opts.out, async () => (created = await create()).secret);
        else created = await create();
        printSecret(created!, opts.out, opts.json, 'Created');
      },
    );
  webhooks
    .command('list')
    .description("List a tenant's webhook subscriptions (never their secrets)")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; json?: boolean }, cmd: Command) => {
      const { client, base } = await webhooksOf(cmd, opts.tenant);
      const { items } = await client.get('webhooks.list', base);
      printRows(items, opts.json, [
        ['id', (w) => w.id],
        ['url', (w) => w.url],
        ['events', (w) => w.eventTypes.join(',')],
        ['enabled', (w) => (w.enabled ? 'yes' : w.disabledReason ? `no (${w.disabledReason})` : 'no')],
        ['failures', (w) => String(w.consecutiveFailures)],
        ['created', (w) => w.createdAt],
      ]);
    });
  webhooks
    .command('event-types')
    .description('The event types a subscription may name')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; json?: boolean }, cmd: Command) => {
      const { client, base } = await webhooksOf(cmd, opts.tenant);
      const { items } = await client.get('webhooks.eventTypes', `${base}/event-types`);
      if (opts.json) return printJson(items);
      process.stdout.write(items.map((t) => `${t}\n`).join(''));
    });
  webhooks
    .command('update')
    .description("Change a subscription's URL, event types, description, or enable/disable it")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .argument('<webhookId>')
    .option('--url <url>', 'a new receiver URL')
    .option('--events <types>', 'the new comma-separated event types', eventTypes)
    .option('--description <text>', 'a new label')
    .option('--enabled <true|false>', 'enable (clears its failures) or disable it', onOff)
    .option('--rotate-secret', 'also replace the signing secret (shown, or written to --out, once)')
    .option('--out <file>', 'with --rotate-secret: write the new secret to a new 0600 file')
    .option('--json', 'print the record as JSON')
    .action(
      async (
        webhookId: string,
        opts: {
          tenant: string;
          url?: string;
          events?: string[];
          description?: string;
          enabled?: boolean;
          rotateSecret?: boolean;
          out?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const { client, base } = await webhooksOf(cmd, opts.tenant);
        const changes = { url: opts.url, eventTypes: opts.events, description: opts.description, enabled: opts.enabled };
        let record: WebhookRecord | undefined;
        if (Object.values(changes).some((v) => v !== undefined))
          record = await client.post('webhooks.update', `${base}/${enc(webhookId)}/update`, changes);
        if (opts.rotateSecret) {
          const rotate = () => client.post('webhooks.rotateSecret', `${base}/${enc(webhookId)}/rotate-secret`);
          let rotated: WithSecret | undefined;
          if (opts.out) await writeNewSecretFile(opts.out, async () => (rotated = await rotate()).secret);
          else rotated = await rotate();
          return printSecret(rotated!, opts.out, opts.json, 'Rotated the secret of');
        }
        if (!record) throw new InvalidArgumentError('nothing to change: give --url, --events, --description, --enabled or --rotate-secret');
        if (opts.json) return printJson(record);
        process.stdout.write(
          `Updated webhook ${record.id}: ${record.enabled ? 'enabled' : 'disabled'}, ${record.eventTypes.join(',')} → ${record.url}\n`,
        );
      },
    );
  webhooks
    .command('delete')
    .description('Delete a subscription and its deliveries')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .argument('<webhookId>')
    .option('--json', 'print the deleted record as JSON')
    .action(async (webhookId: string, opts: { tenant: string; json?: boolean }, cmd: Command) => {
      const { client, base } = await webhooksOf(cmd, opts.tenant);
      const record = await client.post('webhooks.delete', `${base}/${enc(webhookId)}/delete`);
      if (opts.json) return printJson(record);
      process.stdout.write(`Deleted webhook ${record.id}\n`);
    });
  webhooks
    .command('test')
    .description('Send a signed webhook.test event to the subscription')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .argument('<webhookId>')
    .option('--json', 'print the delivery as JSON')
    .action(async (webhookId: string, opts: { tenant: string; json?: boolean }, cmd: Command) => {
      const { client, base } = await webhooksOf(cmd, opts.tenant);
      const delivery = await client.post('webhooks.test', `${base}/${enc(webhookId)}/test`);
      if (opts.json) return printJson(delivery);
      process.stdout.write(`Queued test delivery ${delivery.id}; see \`better-compute webhooks deliveries ${webhookId}\`\n`);
    });
  webhooks
    .command('deliveries')
    .description("List a subscription's deliveries, newest first")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .argument('<webhookId>')
    .option('--state <state>', 'pending, delivered or failed')
    .option('--limit <n>', 'at most this many (1 to 500, default 100)', wholeNumber(1, 500))
    .option('--json', 'print JSON')
    .action(async (webhookId: string, opts: { tenant: string; state?: string; limit?: number; json?: boolean }, cmd: Command) => {
      const { client, base } = await webhooksOf(cmd, opts.tenant);
      const { items } = await client.get('webhooks.deliveries', `${base}/${enc(webhookId)}/deliveries`, {
        state: opts.state,
        limit: opts.limit,
      });
      printRows(items, opts.json, [
        ['id', (d) => d.id],
        ['event', (d) => d.eventType],
        ['state', (d) => d.state],
        ['attempts', (d) => String(d.attempts)],
        ['status', (d) => (d.lastStatus === null ? null : String(d.lastStatus))],
        ['latency ms', (d) => (d.lastLatencyMs === null ? null : String(d.lastLatencyMs))],
        ['next attempt', (d) => d.nextAttemptAt],
        ['error', (d) => d.lastError],
      ]);
    });
  webhooks
    .command('redeliver')
    .description('Send a delivery again now, under the same webhook-id')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .argument('<webhookId>')
    .argument('<deliveryId>')
    .option('--json', 'print the delivery as JSON')
    .action(async (webhookId: string, deliveryId: string, opts: { tenant: string; json?: boolean }, cmd: Command) => {
      const { client, base } = await webhooksOf(cmd, opts.tenant);
      const delivery = await client.post('webhooks.redeliver', `${base}/${enc(webhookId)}/deliveries/${enc(deliveryId)}/redeliver`);
      if (opts.json) return printJson(delivery);
      process.stdout.write(`Queued delivery ${delivery.id} again\n`);
    });
}
