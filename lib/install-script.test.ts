import { describe, expect, it } from 'vitest';
import { installScriptDefaults, originOf, validateInstallScriptForm } from './install-script';

describe('installScriptDefaults', () => {
  it('takes the gateway origin from the well-known document and the console origin as base', () => {
    expect(installScriptDefaults({ gateway: { url: 'https://gw.example.com:8443/' } }, 'https://console.example.com')).toEqual({
      gatewayUrl: 'https://gw.example.com:8443',
      baseUrl: 'https://console.example.com',
    });
  });
  it('leaves the gateway empty when the document has none (no gateway configured)', () => {
    expect(installScriptDefaults({ join: {} }, 'http://localhost:3000').gatewayUrl).toBe('');
    expect(installScriptDefaults(null, 'http://localhost:3000').gatewayUrl).toBe('');
  });
  it('keeps a value that is no URL, for the form to flag', () => {
    expect(originOf('gateway')).toBe('gateway');
  });
});

describe('validateInstallScriptForm', () => {
  const ids = { tenantId: 'tnt_01m8r3g5f5ysg43pq1214hc5sk', poolId: 'pool_01m8r3g5f5ysg43pq1214hc5sk' };
  it('names every bad URL field at once', () => {
    expect(validateInstallScriptForm({ ...ids, gatewayUrl: '', baseUrl: 'https://c.example.com/console' })).toEqual({
      gatewayUrl: 'Enter a URL, e.g. https://host:8443',
      baseUrl: 'an http(s) origin with no path, query or credentials',
    });
    expect(validateInstallScriptForm({ ...ids, gatewayUrl: 'gateway', baseUrl: '' })).toEqual({
      gatewayUrl: 'Not a URL: give an http(s) origin',
      baseUrl: 'Enter a URL, e.g. https://host:8443',
    });
  });
  it('accepts two origins', () => {
    expect(validateInstallScriptForm({ ...ids, gatewayUrl: 'https://gw.example.com:8443', baseUrl: 'http://10.0.0.5:3000' })).toEqual({});
  });
});
