import type { SeededRandom } from './seeded-random';

/** A generated request body and how it was made (enough to read a failure; the seed replays it exactly). */
interface MutatedBody {
  body: Buffer;
  description: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// Literals JSON.stringify cannot write (overflowing numbers, lone surrogates, deep nesting) are put in the
// serialized text in place of a marker string.
const RAW = '\u0001raw:';

const HUGE_NUMBERS = [
  '1e309',
  '-1e309',
  '1e-400',
  '123456789012345678901234567890',
  '9007199254740993',
  '-0',
  '0.0000001',
  '1.7976931348623157e308',
  '4294967296',
  '-2147483649',
];
const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\t\n\r',
  '\u202e\u0041',
  '😀'.repeat(40),
  "'; DROP TABLE nodes; --",
  '%00%ff',
  '../../etc/passwd',
  '__proto__',
  'null',
  'true',
  '1',
  '\ufeff',
  'é'.normalize('NFD'),
];
const ODD_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  '',
  'toString',
  'hasOwnProperty',
  'x'.repeat(300),
  'attestation',
  'tenantId',
  'id',
];
const INVALID_UTF8 = [
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
];
const B64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function paths(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = prefix.length ? [prefix] : [];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  return out;
}

function getAt(root: Json, path: (string | number)[]): Json {
  return path.reduce<Json>((v, k) => (v as Record<string | number, Json>)[k]!, root);
}

function setAt(root: Json, path: (string | number)[], value: Json | undefined): Json {
  if (!path.length) return value ?? null;
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, Json>;
  const key = path[path.length - 1]!;
  if (value === undefined) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else parent[key] = value;
  return root;
}

function randomValue(random: SeededRandom, depth = 0): Json {
  switch (random.int(0, depth > 2 ? 4 : 6)) {
    case 0:
      return null;
    case 1:
      return random.chance(0.5);
    case 2:
      return random.pick([0, -1, 1.5, 2 ** 31, 2 ** 53, -(2 ** 63), 1e21, Number.MAX_SAFE_INTEGER]);
    case 3:
      return random.pick(ODD_STRINGS);
    case 4:
      return RAW + random.pick(HUGE_NUMBERS);
    case 5:
      return Array.from({ length: random.int(0, 3) }, () => randomValue(random, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: random.int(0, 3) }, () => [random.pick(ODD_KEYS), randomValue(random, depth + 1)]));
  }
}

/** A string that is almost, or not at all, the base64 it replaces. */
function wrongBase64(random: SeededRandom, text: string): [string, string] {
  const at = random.int(0, Math.max(0, text.length - 1));
  switch (random.int(0, 8)) {
    case 0:
      return [
        text.slice(0, at) + random.pick(['!', '*', ' ', '\n', '%', '.', '-', '_', '\u00e9']) + text.slice(at + 1),
        'invalid base64 character',
      ];
    case 1:
      return [text.replace(/=+$/, ''), 'padding removed'];
    case 2:
      return [text + random.pick(['=', '==', '===', 'A', 'AB']), 'padding or length wrong'];
    case 3:
      return [text.slice(0, Math.max(0, text.length - random.int(1, 4))), 'truncated by a few characters'];
    case 4:
      return [text.replace(/\+/g, '-').replace(/\//g, '_'), 'base64url alphabet'];
    case 5:
      return [Buffer.from(text).toString('base64'), 'encoded twice'];
    case 6:
      // Valid base64 of the wrong bytes: a flipped character changes what it decodes to.
      return [
        text.slice(0, at) + B64_ALPHABET[(B64_ALPHABET.indexOf(text[at] ?? 'A') + 1) % 64] + text.slice(at + 1),
        'one character changed (still base64)',
      ];
    case 7:
      return [text.split('.').reverse().join('.'), 'segments reversed'];
    default:
      return [`${text.slice(0, at)}\n${text.slice(at)}`, 'line break inside'];
  }
}

/** Nesting `depth` levels deep, as text (JSON.stringify would recurse). */
const deepNesting = (random: SeededRandom, depth: number) =>
  random.chance(0.5) ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

function mutateValue(random: SeededRandom, root: Json, base64Fields: ReadonlySet<string>): [Json, string] {
  const all = paths(root);
  const path = all.length ? random.pick(all) : [];
  const where = path.join('.') || '(body)';
  const current = path.length ? getAt(root, path) : root;
  switch (random.int(0, 11)) {
    case 0:
      return [path.length ? setAt(root, path, undefined) : {}, `deleted ${where}`];
    case 1: {
      const container = random.pick([
        [] as (string | number)[],
        ...all.filter((p) => {
          const v = getAt(root, p);
          return v !== null && typeof v === 'object' && !Array.isArray(v);
        }),
      ]);
      const key = random.pick(ODD_KEYS);
      const target = (container.length ? getAt(root, container) : root) as Record<string, Json>;
      if (target && typeof target === 'object' && !Array.isArray(target))
        Object.defineProperty(target, key, { value: randomValue(random), enumerable: true, configurable: true, writable: true });
      return [root, `unknown field ${JSON.stringify(key.slice(0, 20))} in ${container.join('.') || '(body)'}`];
    }
    case 2:
    case 3: {
      let value = randomValue(random);
      if (typeof value === typeof current && !Array.isArray(value)) value = [value];
      return [
        setAt(root, path, value),
        `type swap at ${where}: ${JSON.stringify(current)?.slice(0, 12)} -> ${JSON.stringify(value).slice(0, 40)}`,
      ];
    }
    case 4: {
      const literal = random.pick(HUGE_NUMBERS);
      return [setAt(root, path, RAW + literal), `number ${literal} at ${where}`];
    }
    case 5: {
      const depth = random.pick([2, 64, 1000, 5000, 20000]);
      return [setAt(root, path, RAW + deepNesting(random, depth)), `nesting ${depth} deep at ${where}`];
    }
    case 6: {
      const length = random.pick([257, 4096, 70_000, 300_000]);
      return [setAt(root, path, random.pick(['A', 'é', '😀', '\\']).repeat(length)), `string of ${length} at ${where}`];
    }
    case 7: {
      const odd = random.pick([...ODD_STRINGS, `${RAW}"\\ud800"`, `${RAW}"\\udfff x"`, `${RAW}"\\u0000"`]);
      return [setAt(root, path, odd), `odd string ${JSON.stringify(odd).slice(0, 30)} at ${where}`];
    }
    case 8: {
      const fields = all.filter((p) => base64Fields.has(String(p[p.length - 1])) && typeof getAt(root, p) === 'string');
      if (!fields.length) return [setAt(root, path, random.chance(0.5) ? [] : {}), `empty container at ${where}`];
      const field = random.pick(fields);
      const [text, how] = wrongBase64(random, getAt(root, field) as string);
      return [setAt(root, field, text), `${field.join('.')}: ${how}`];
    }
    case 9:
      return [setAt(root, path, [current]), `${where} wrapped in an array`];
    case 10:
      return [random.pick<Json>([[], 'body', 42, null, true, [root]]), 'body not an object'];
    default:
      return [setAt(root, path, null), `null at ${where}`];
  }
}

function serialize(value: Json): Buffer {
  const text = JSON.stringify(value, (_, v) => v).replace(
    /"\\u0001raw:((?:[^"\\]|\\.)*)"/g,
    (_, raw: string) => JSON.parse(`"${raw}"`) as string,
  );
  return Buffer.from(text, 'utf8');
}

function mutateBytes(random: SeededRandom, body: Buffer): [Buffer, string] {
  const at = random.int(0, body.length);
  switch (random.int(0, 8)) {
    case 0:
      return [body.subarray(0, at), `truncated at byte ${at} of ${body.length}`];
    case 1: {
      const bytes = random.pick(INVALID_UTF8);
      // Inside a string where possible: after an opening quote.
      const quote = body.indexOf('"', at);
      const where = quote >= 0 ? quote + 1 : at;
      return [
        Buffer.concat([body.subarray(0, where), Buffer.from(bytes), body.subarray(where)]),
        `invalid UTF-8 ${Buffer.from(bytes).toString('hex')} at byte ${where}`,
      ];
    }
    case 2: {
      const copy = Buffer.from(body);
      if (copy.length) copy[Math.min(at, copy.length - 1)]! ^= 1 << random.int(0, 7);
      return [copy, `bit flipped at byte ${at}`];
    }
    case 3:
      return [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]), 'UTF-8 BOM first'];
    case 4:
      return [Buffer.concat([body, Buffer.from(random.pick(['x', '}', ']', ',', ' {}', '\u0000']))]), 'trailing bytes'];
    case 5: {
      const end = body.lastIndexOf('}');
      if (end < 1) return [Buffer.alloc(0), 'empty body'];
      const dup = `,${random.pick(['"sealedToken"', '"csr"', '"claims"', '"name"', '"maxUses"', '"role"', '"__proto__"'])}:${JSON.stringify(randomValue(random))}`;
      return [
        Buffer.concat([body.subarray(0, end), Buffer.from(dup.replace(/"\\u0001raw:[^"]*"/g, '1')), body.subarray(end)]),
        'duplicate key',
      ];
    }
    case 6:
      return [Buffer.from(body.toString('utf8'), 'utf16le'), 'UTF-16 encoded'];
    case 7:
      return [Buffer.alloc(0), 'empty body'];
    default:
      return [Buffer.from(random.pick(['null', '[]', '""', '0', 'true', '{', '{"', '{}', ' ', 'nul', '[{}]'])), 'short literal'];
  }
}

/**
 * A mutation of a valid body: one to three structural changes (type swaps, huge numbers, deep nesting,
 * long and odd strings, wrong base64 in `base64Fields`, unknown fields, deletions), then, some of the time,
 * byte-level damage (truncation, invalid UTF-8, bit flips, duplicate keys, another encoding).
 */
export function mutateBody(
  random: SeededRandom,
  base: Record<string, unknown>,
  base64Fields: ReadonlySet<string> = new Set(),
): MutatedBody {
  let value = structuredClone(base) as Json;
  const steps: string[] = [];
  if (random.chance(0.85)) {
    for (let n = random.int(1, 3); n > 0; n--) {
      const [next, description] = mutateValue(random, value, base64Fields);
      value = next;
      steps.push(description);
    }
  }
  let body = serialize(value);
  if (!steps.length || random.chance(0.3)) {
    const [bytes, description] = mutateBytes(random, body);
    body = bytes;
    steps.push(description);
  }
  return { body, description: steps.join('; ') };
}
