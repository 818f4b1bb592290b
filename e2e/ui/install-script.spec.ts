import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { expect, test, type Page } from '@playwright/test';
import { uniqueName } from '../support/env';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

async function poolWithToken(page: Page) {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const siteName = uniqueName('script-site');
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: siteName });
  const name = uniqueName('script-pool');
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', { tenantId, siteId: site.id, name, agent: 'bcd' });
  // A live token of the pool: the script must not carry it (nor any other token).
  const { token } = await trpc<{ token: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId: pool.id,
    ttlSeconds: 600,
    idempotencyKey: randomUUID(),
  });
  return { tenantId, siteId: site.id, siteName, poolId: pool.id, name, token };
}

async function openDialog(page: Page, tenantId: string, name: string) {
  await page.goto(`/pools?tenant=${tenantId}`);
  await page.getByRole('button', { name: `Download install script for pool ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: `Install script for pool ${name}` });
  await expect(dialog).toContainText('sudo sh install-bcd.sh < join-token');
  // The defaults come from the well-known document: the gateway it publishes and this console's origin.
  const doc = await (await page.request.get('/api/compute/.well-known/better-compute')).json();
  await expect(dialog.getByLabel('Gateway URL')).toHaveValue(new URL(doc.gateway.url).origin);
  await expect(dialog.getByLabel('Base URL')).toHaveValue(new URL(page.url()).origin);
  return dialog;
}

/**
 * The pools page's "Install script": the download is the pool's `install-bcd.sh`, a POSIX shell script for
 * that pool and its site, holding no join token, pinning the SHA-256 of the bcd this server serves.
 */
test("the install script button downloads the pool's script, pinned to the served bcd and free of tokens", async ({ page }) => {
  test.setTimeout(90_000);
  await openConsole(page);
  const p = await poolWithToken(page);
  const dialog = await openDialog(page, p.tenantId, p.name);
  const downloaded = page.waitForEvent('download');
  await dialog.getByRole('button', { name: 'Download install script' }).click();
  const download = await downloaded;
  expect(download.suggestedFilename()).toBe('install-bcd.sh');
  const script = await readFile((await download.path())!, 'utf8');
  await expect(dialog.getByRole('status')).toContainText('Downloaded install-bcd.sh (bcd ');

  expect(script.startsWith('#!/bin/sh\n')).toBe(true);
  expect(script).toContain(`joins this machine to pool ${p.poolId} (site ${p.siteId})`);
  expect(script).toContain(`site = "${p.siteId}"`);
  expect(script).not.toContain(p.token);
  // No token of any pool: only the `bcjt_...` placeholders of its usage and its shape check.
  expect(script).not.toMatch(/bcjt_jt_[0-9a-z]{26}/i);
  // The digest pin: the script refuses a bcd whose SHA-256 differs from the one this server serves.
  const version = /^BCD_VERSION='([^']+)'$/m.exec(script)![1]!;
  const digest = /^SHA256_AMD64='([0-9a-f]{64})'$/m.exec(script)?.[1];
  expect(digest, 'the script pins the amd64 digest').toBeTruthy();
  const served = await page.request.head(`/api/compute/downloads/bcd/${version}/linux-amd64`);
  expect(served.status()).toBe(200);
  expect(served.headers()['etag']).toBe(`"sha256-${digest}"`);
  // The pins it embeds are the server's own, as the machines will check them.
  const doc = await (await page.request.get('/api/compute/.well-known/better-compute')).json();
  expect(script).toContain(`join_signing_key_pin = "${doc.join.signingKeyPin}"`);
  expect(script).toContain(`serving_ca_spki_pin = "${doc.gateway.servingCaPin}"`);
});

/** A server with no bcd build of the version asked for answers an error on `sha256`, a field the form has no control for: it must show. */
test('the install script dialog shows an error about a field it has no control for', async ({ page }) => {
  test.setTimeout(60_000);
  await openConsole(page);
  const p = await poolWithToken(page);
  const dialog = await openDialog(page, p.tenantId, p.name);
  // Ask the real server for a version it has no build of (the form has no version field).
  await page.route('**/api/trpc/daemon.installScript**', async (route) => {
    const body = JSON.parse(route.request().postData() ?? '{}') as Record<string, Record<string, unknown>>;
    for (const input of Object.values(body)) input.bcdVersion = '9.9.9';
    await route.continue({ postData: JSON.stringify(body) });
  });
  let downloads = 0;
  page.on('download', () => downloads++);
  await dialog.getByRole('button', { name: 'Download install script' }).click();
  await expect(dialog.getByRole('alert')).toContainText('No digest for bcd 9.9.9');
  expect(downloads).toBe(0);
});

/** Both URL fields' errors show at once, in the dialog's own style (no browser bubble blocks the submit), and nothing is asked of the server. */
test('the install script dialog names both bad URLs at once and generates nothing', async ({ page }) => {
  test.setTimeout(60_000);
  await openConsole(page);
  const p = await poolWithToken(page);
  const dialog = await openDialog(page, p.tenantId, p.name);
  const calls: string[] = [];
  page.on('request', (request) => request.url().includes('daemon.installScript') && calls.push(request.url()));
  await dialog.getByLabel('Gateway URL').fill('');
  await dialog.getByLabel('Base URL').fill('https://console.example.com/path');
  await dialog.getByRole('button', { name: 'Download install script' }).click();
  await expect(dialog.getByLabel('Gateway URL')).toHaveAttribute('aria-invalid', 'true');
  await expect(dialog.getByLabel('Gateway URL')).toHaveAccessibleDescription(/Enter a URL/);
  await expect(dialog.getByLabel('Base URL')).toHaveAttribute('aria-invalid', 'true');
  await expect(dialog.getByLabel('Base URL')).toHaveAccessibleDescription(/an http\(s\) origin with no path/);
  expect(calls).toEqual([]);
});
