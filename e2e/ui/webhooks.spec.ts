import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from '@playwright/test';
import { signInThroughForm } from '../support/session';
import { expectNoSeriousViolations } from '../support/axe';

type Delivery = { headers: http.IncomingHttpHeaders; body: string };

/** A receiver on 127.0.0.1 (the e2e server runs with BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE=true). */
async function startReceiver() {
  const received: Delivery[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise((r) => server.close(r)),
  };
}

function verifies(secret: string, d: Delivery): boolean {
  const mac = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${d.headers['webhook-id']}.${d.headers['webhook-timestamp']}.${d.body}`)
    .digest();
  const given = Buffer.from(String(d.headers['webhook-signature']).replace(/^v1,/, ''), 'base64');
  return given.length === mac.length && timingSafeEqual(given, mac);
}

test('Webhooks: create with a one-time secret, send a test, see it delivered with 200', async ({ page }) => {
  test.setTimeout(120_000);
  const receiver = await startReceiver();
  try {
    await signInThroughForm(page);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'Webhooks', level: 1 })).toBeVisible();
    await expect(page.getByRole('region', { name: 'Webhook subscriptions' })).toBeVisible();
    await expectNoSeriousViolations(page, 'webhooks');

    await page.getByRole('button', { name: 'Create webhook' }).click();
    const form = page.getByRole('dialog', { name: 'Create webhook' });
    await form.getByLabel('URL').fill(receiver.url);
    await form.getByRole('checkbox', { name: 'node.joined' }).check();
    await form.getByRole('checkbox', { name: 'node.join-request.created' }).check();
    await expectNoSeriousViolations(page, 'webhook-create');
    await form.getByRole('button', { name: 'Create webhook' }).click();

    const shown = page.getByRole('dialog', { name: 'New webhook' });
    const field = shown.getByLabel('Signing secret');
    await expect(field).toHaveValue(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const secret = await field.inputValue();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await shown.getByRole('button', { name: 'Copy' }).click();
    await shown.getByRole('button', { name: 'Done' }).click();
    await expect(shown).toBeHidden();
    // Shown once: gone from the page once closed.
    await expect(page.locator('body')).not.toContainText(secret.slice(6, 30));

    const row = page.getByRole('region', { name: 'Webhook subscriptions' }).getByRole('row').filter({ hasText: receiver.url });
    await expect(row).toContainText('Enabled');
    await row.getByRole('button', { name: `Send a test event to ${receiver.url}` }).click();
    const deliveries = page.getByRole('region', { name: 'Deliveries' });
    await expect(async () => {
      await deliveries.getByRole('button', { name: 'Refresh' }).click();
      await expect(deliveries.getByRole('row').filter({ hasText: 'webhook.test' })).toContainText('HTTP 200', { timeout: 1_000 });
    }).toPass({ timeout: 30_000 });
    await expect(deliveries.getByRole('row').filter({ hasText: 'webhook.test' })).toContainText('Delivered');
    await expectNoSeriousViolations(page, 'webhook-deliveries');

    const test_ = receiver.received.find((d) => JSON.parse(d.body).type === 'webhook.test');
    expect(test_).toBeTruthy();
    expect(verifies(secret, test_!)).toBe(true);

    // At phone width the page still fits and the actions stay reachable.
    await page.setViewportSize({ width: 390, height: 844 });
    await expect(row.getByRole('button', { name: `Edit ${receiver.url}` })).toBeAttached();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(1);
  } finally {
    await receiver.close();
  }
});
