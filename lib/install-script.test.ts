import { describe, expect, it } from 'vitest';
import { installScriptDefaults, originOf } from './install-script';

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
