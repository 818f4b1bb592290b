import { chmod, open, rename } from 'node:fs/promises';
import { agentErrorClass } from '../errors';

/** `/etc/bcd/config.toml`, exactly the keys the spec shows, all required. */
export interface BcdConfig {
  gatewayUrl: string;
  site: string;
  servingCaSpkiPin: string;
  joinSigningKeyPin: string;
  joinEncryptionKeyPin: string;
  /** The `[helper]` table: `bcd node` runs as `user` and asks `bcd helper` on `socket` for the TPM. */
  helper?: HelperConfig;
}

interface HelperConfig {
  user: string;
  socket: string;
}

const HELPER_KEYS: ReadonlyArray<[tomlKey: string, field: keyof HelperConfig]> = [
  ['user', 'user'],
  ['socket', 'socket'],
];
const HELPER_DEFAULTS: HelperConfig = { user: 'bcd', socket: '/run/bcd-helper/helper.sock' };

const KEYS: ReadonlyArray<[tomlKey: string, field: Exclude<keyof BcdConfig, 'helper'>]> = [
  ['gateway_url', 'gatewayUrl'],
  ['site', 'site'],
  ['serving_ca_spki_pin', 'servingCaSpkiPin'],
  ['join_signing_key_pin', 'joinSigningKeyPin'],
  ['join_encryption_key_pin', 'joinEncryptionKeyPin'],
];
const PIN = /^sha256\/[A-Za-z0-9+/]{43}=$/;
const LINE = /^([a-z_]+)\s*=\s*"((?:[^"\\\u0000-\u001f]|\\["\\])*)"\s*(?:#.*)?$/;

export class ConfigError extends agentErrorClass('CONFIG', 'ConfigError') {}

/**
 * Parses config.toml: the flat `key = "string"` subset of TOML the spec's file uses (comments and blank lines
 * allowed). Anything else (an unknown or repeated key, another value type, a table) is refused with its line
 * number rather than ignored, since a typo in a pin's key name would otherwise silently drop a pin.
 */
export function parseConfigToml(text: string, source = 'config.toml'): BcdConfig {
  const known = new Map(KEYS);
  const values: Partial<BcdConfig> = {};
  let helper: Partial<HelperConfig> | undefined;
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (/^\[helper\]\s*(?:#.*)?$/.test(line)) {
      if (helper) throw new ConfigError(`${source}:${index + 1}: [helper] is set twice`);
      helper = {};
      return;
    }
    if (helper) return parseHelperLine(helper, line, `${source}:${index + 1}`);
    const match = LINE.exec(line);
    if (!match) throw new ConfigError(`${source}:${index + 1}: expected key = "value"`);
    const field = known.get(match[1]!);
    if (!field) throw new ConfigError(`${source}:${index + 1}: unknown key ${match[1]}`);
    if (values[field] !== undefined) throw new ConfigError(`${source}:${index + 1}: ${match[1]} is set twice`);
    values[field] = match[2]!.replace(/\\(["\\])/g, '$1');
  });
  for (const [key, field] of KEYS) {
    if (!values[field]) throw new ConfigError(`${source}: ${key} is missing`);
    if (key.endsWith('_pin') && !PIN.test(values[field]!)) throw new ConfigError(`${source}: ${key} is not a sha256/<base64> pin`);
  }
  const url = new URL(values.gatewayUrl!);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(`${source}: gateway_url must be an https:// URL`);
  return helper ? { ...(values as BcdConfig), helper: checkedHelper(helper, source) } : (values as BcdConfig);
}

/** A line of the `[helper]` table: `user` (a system user name) and `socket` (an absolute path). */
function parseHelperLine(helper: Partial<HelperConfig>, line: string, where: string): void {
  const match = LINE.exec(line);
  if (!match) throw new ConfigError(`${where}: expected key = "value"`);
  const field = new Map(HELPER_KEYS).get(match[1]!);
  if (!field) throw new ConfigError(`${where}: unknown key ${match[1]} in [helper]`);
  if (helper[field] !== undefined) throw new ConfigError(`${where}: ${match[1]} is set twice`);
  helper[field] = match[2]!.replace(/\\(["\\])/g, '$1');
}

function checkedHelper(helper: Partial<HelperConfig>, source: string): HelperConfig {
  const checked = { ...HELPER_DEFAULTS, ...helper };
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(checked.user) || checked.user === 'root')
    throw new ConfigError(`${source}: [helper] user must be a system user other than root`);
  if (!checked.socket.startsWith('/')) throw new ConfigError(`${source}: [helper] socket must be an absolute path`);
  return checked;
}

/** The file's text, in the spec's key order. */
export function formatConfigToml(config: BcdConfig): string {
  const quoted = (value: string) => `"${value.replace(/(["\\])/g, '\\$1')}"`;
  const main = KEYS.map(([key, field]) => `${key} = ${quoted(config[field])}`).join('\n') + '\n';
  const { helper } = config;
  return helper ? `${main}\n[helper]\n${HELPER_KEYS.map(([key, field]) => `${key} = ${quoted(helper[field])}`).join('\n')}\n` : main;
}

/** Writes `content` to `file` atomically with `mode` (a flushed temporary file renamed into place). */
export async function writeFileAtomic(file: string, content: string, mode: number): Promise<void> {
  const temporary = `${file}.tmp-${process.pid}`;
  const handle = await open(temporary, 'w', mode);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await chmod(temporary, mode);
  await rename(temporary, file);
}
