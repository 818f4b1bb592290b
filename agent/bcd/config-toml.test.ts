import { describe, expect, it } from 'vitest';
import { formatConfigToml, parseConfigToml } from './config-toml';
import { renewalOptionsFromConfig } from './node-options';

const pin = (c: string) => `sha256/${c.repeat(43)}=`;
const SPEC_FILE = `gateway_url = "https://gw.eu.example.com"
site = "site_1"
serving_ca_spki_pin = "${pin('A')}"
join_signing_key_pin = "${pin('B')}"
join_encryption_key_pin = "${pin('C')}"
`;

describe('config.toml', () => {
  it('reads the file exactly as the spec shows it, and writes it back byte for byte', () => {
    const config = parseConfigToml(SPEC_FILE);
    expect(config).toEqual({
      gatewayUrl: 'https://gw.eu.example.com',
      site: 'site_1',
      servingCaSpkiPin: pin('A'),
      joinSigningKeyPin: pin('B'),
      joinEncryptionKeyPin: pin('C'),
    });
    expect(formatConfigToml(config)).toBe(SPEC_FILE);
  });

  it('allows comments and blank lines', () => {
    expect(parseConfigToml(`# bcd\n\n${SPEC_FILE.replace('site = "site_1"', 'site = "site_1"  # the site')}`).site).toBe('site_1');
  });

  it.each([
    ['an unknown key (a typo would drop a pin)', `${SPEC_FILE}join_signing_pin = "x"\n`, /unknown key join_signing_pin/],
    ['a key set twice', `${SPEC_FILE}site = "site_2"\n`, /set twice/],
    ['a missing pin', SPEC_FILE.replace(/join_encryption_key_pin.*\n/, ''), /join_encryption_key_pin is missing/],
    ['a pin that is not one', SPEC_FILE.replace(pin('B'), 'sha256/short'), /join_signing_key_pin is not/],
    ['a value that is not a string', SPEC_FILE.replace('"site_1"', '1'), /:2: expected key = "value"/],
    ['a table', `[gateway]\n${SPEC_FILE}`, /:1: expected/],
  ])('refuses %s', (_name, text, message) => {
    expect(() => parseConfigToml(text)).toThrow(message);
  });
});

describe('renewalOptionsFromConfig', () => {
  it('maps the config to the renewal loop options, the TLS name from the gateway URL', () => {
    expect(renewalOptionsFromConfig(parseConfigToml(SPEC_FILE), '/var/lib/bcd')).toEqual({
      identityDir: '/var/lib/bcd',
      gatewayUrl: 'https://gw.eu.example.com',
      servingCaPin: pin('A'),
      gatewayServerName: 'gw.eu.example.com',
    });
  });
});
