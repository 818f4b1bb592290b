import { describe, expect, it } from 'vitest';
import { createCaller } from '../api/root';
import { installScriptInput } from '../../protocol/api/daemon-schemas';
import { matchRoute } from '../api/rest/routes';
import { parseSha256Option } from '../../cli/commands/daemon';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';

const input = (tenantId: string, poolId: string) => ({
  tenantId,
  poolId,
  gatewayUrl: 'https://gw.eu.example.com',
  baseUrl: 'https://compute.example.com',
  sha256: { amd64: 'a'.repeat(64) },
});

describe('daemon.installScript', () => {
  it("is another tenant's pool: NOT_FOUND, and anonymous callers are refused", async () => {
    const db = testDb();
    const a = await createTestTenant(db);
    const b = await createTestTenant(db);
    expect(await failure(createCaller({ db, principal: b.admin }).daemon.installScript(input(a.tenantId, a.poolId)))).toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(createCaller({ db, principal: null }).daemon.installScript(input(a.tenantId, a.poolId))).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
  });

  it("refuses a site that is not the pool's before anything else", async () => {
    const db = testDb();
    const a = await createTestTenant(db);
    const other = await createTestTenant(db);
    const answer = await failure(
      createCaller({ db, principal: a.viewer }).daemon.installScript({ ...input(a.tenantId, a.poolId), siteId: other.siteId }),
    );
    expect(answer).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'siteId' });
  });

  it.each([
    ['a base URL with a path', { baseUrl: 'https://compute.example.com/x' }, 'baseUrl'],
    ['a gateway URL with credentials', { gatewayUrl: 'https://u:p@gw.example.com' }, 'gatewayUrl'],
    ['a digest that is not hex', { sha256: { amd64: 'z'.repeat(64) } }, 'sha256.amd64'],
    ['an unknown arch', { sha256: { s390x: 'a'.repeat(64) } }, 'sha256'],
    ['an IPv6 address without brackets', { gatewayUrl: 'https://2001:db8::2' }, 'gatewayUrl'],
    ['an IPv6 address with a zone id', { baseUrl: 'https://[fe80::1%25eth0]' }, 'baseUrl'],
    ['an IPv6 origin with a path', { baseUrl: 'https://[fd00::1]/x' }, 'baseUrl'],
  ])('refuses %s', async (_name, change, field) => {
    const db = testDb();
    const a = await createTestTenant(db);
    const answer = await failure(
      createCaller({ db, principal: a.admin }).daemon.installScript({ ...input(a.tenantId, a.poolId), ...change } as never),
    );
    expect(answer.code).toBe('INVALID_ARGUMENT');
    expect(answer.message + (answer.field ?? '')).toContain(field.split('.')[0]);
  });

  it.each([
    ['https://[2001:db8::2]:8443', 'https://[fd00::1]', 'https://[2001:db8::2]:8443', 'https://[fd00::1]'],
    ['https://[2001:DB8:0::2]:8443/', 'http://[::1]:3000', 'https://[2001:db8::2]:8443', 'http://[::1]:3000'],
  ])('embeds the IPv6 gateway %s and base %s as the URL parser writes them', async (gatewayUrl, baseUrl, gateway, base) => {
    const db = testDb();
    const a = await createTestTenant(db);
    const answer = await failure(
      createCaller({ db, principal: a.admin }).daemon.installScript({ ...input(a.tenantId, a.poolId), gatewayUrl, baseUrl }),
    );
    // Past the schema, the test PKI is what is missing: an IPv6 origin is not what is refused.
    expect(answer.field ?? '').not.toMatch(/Url$/);
    expect(answer.message).not.toMatch(/IPv6|origin/);
    expect(installScriptInput.parse({ ...input(a.tenantId, a.poolId), gatewayUrl, baseUrl })).toMatchObject({
      gatewayUrl: gateway,
      baseUrl: base,
    });
  });

  it('is served over REST at POST /v1/tenants/{tenantId}/pools/{poolId}/install-script', () => {
    expect(matchRoute('POST', '/v1/tenants/tnt_1/pools/pool_2/install-script')).toMatchObject({
      route: { procedure: 'daemon.installScript' },
      params: { tenantId: 'tnt_1', poolId: 'pool_2' },
    });
  });
});

describe('--sha256', () => {
  it('parses amd64=<hex>,arm64=<hex> and refuses anything else', () => {
    expect(parseSha256Option(`amd64=${'A'.repeat(64)}, arm64=${'b'.repeat(64)}`)).toEqual({ amd64: 'a'.repeat(64), arm64: 'b'.repeat(64) });
    expect(() => parseSha256Option('x86=abc')).toThrow(/--sha256 takes/);
  });
});
