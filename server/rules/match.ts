import { BlockList, isIP } from 'node:net';

/** What a rule matches on; every condition named must hold (a list holds when any of its values does). */
export interface RuleMatch {
  /** MACs or prefixes (an OUI such as `3c:ec:ef`), compared with the MAC the boot step vouched for. */
  macPrefixes?: string[];
  /** Compared with the claimed product, board and chassis serials, case-insensitively. */
  serials?: string[];
  productUuids?: string[];
  gpuUuids?: string[];
  /** `*` and `?` wildcards, case-insensitive, against the claimed hostname. */
  hostnamePattern?: string;
  /** CIDR blocks (IPv4 or IPv6) the vouched lease address must be in. */
  subnets?: string[];
  vouchedBy?: string[];
  attestor?: string;
  /** `*` and `?` wildcards, case-insensitive, against the claimed DMI `sysVendor`. */
  vendors?: string[];
  /** `*` and `?` wildcards, case-insensitive, against the claimed DMI `productName` (the model). */
  models?: string[];
}

/** Where each condition's value comes from: what the boot step vouched for, or the machine's own claims. */
const MATCH_SOURCES: Record<keyof RuleMatch, 'vouched' | 'claimed'> = {
  attestor: 'vouched',
  macPrefixes: 'vouched',
  subnets: 'vouched',
  vouchedBy: 'vouched',
  serials: 'claimed',
  productUuids: 'claimed',
  gpuUuids: 'claimed',
  hostnamePattern: 'claimed',
  vendors: 'claimed',
  models: 'claimed',
};

/** The conditions a rule names, each with where its value comes from (what the console shows beside a match). */
export function matchedOn(match: RuleMatch): { field: keyof RuleMatch; source: 'vouched' | 'claimed' }[] {
  return (Object.keys(MATCH_SOURCES) as (keyof RuleMatch)[])
    .filter((field) => (Array.isArray(match[field]) ? (match[field] as unknown[]).length > 0 : match[field] !== undefined))
    .map((field) => ({ field, source: MATCH_SOURCES[field] }));
}

/**
 * What a rule is decided on: what the boot step vouched for (the bound MAC, the lease's IP, who minted
 * the token) and what the machine claims. Claims are the machine's own word; the console says which is which.
 */
export interface RuleFacts {
  attestor: string;
  vouchedMac: string | null;
  vouchedIp: string | null;
  vouchedBy: string | null;
  claims: Record<string, unknown>;
}

export interface RuleInForce {
  id: string;
  name: string;
  /** A disabled rule decides nothing (false only when the row says so). */
  enabled?: boolean;
  action: 'approve' | 'reject' | 'leave';
  match: RuleMatch;
  maxAdmissions: number | null;
  admissions: number;
  validUntil: Date | null;
}

const hex = (mac: string) => mac.toLowerCase().replace(/[^0-9a-f]/g, '');
const lower = (value: unknown) => (typeof value === 'string' ? value.trim().toLowerCase() : null);
const uuid = (value: unknown) => lower(value)?.replace(/[{}]/g, '') ?? null;

function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'i');
}

function blockListOf(subnets: string[]): BlockList {
  const list = new BlockList();
  for (const block of subnets) {
    const [address, bits] = block.split('/');
    const kind = isIP(address ?? '');
    if (kind) list.addSubnet(address!, Number(bits ?? (kind === 4 ? 32 : 128)), kind === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** What a join is matched on, normalized once per join however many rules look at it. */
interface NormalFacts {
  mac: string;
  ip: string | null;
  family: number;
  serials: string[];
  productUuid: string | null;
  gpuUuids: (string | null)[];
  hostname: string;
  vendor: string;
  model: string;
}
const normalFacts = new WeakMap<RuleFacts, NormalFacts>();
function normalOf(facts: RuleFacts): NormalFacts {
  let n = normalFacts.get(facts);
  if (n) return n;
  const c = facts.claims;
  n = {
    mac: facts.vouchedMac ? hex(facts.vouchedMac) : '',
    ip: facts.vouchedIp,
    family: facts.vouchedIp ? isIP(facts.vouchedIp) : 0,
    serials: [c.productSerial, c.boardSerial, c.chassisSerial].map(lower).filter((v): v is string => !!v),
    productUuid: uuid(c.productUuid),
    gpuUuids: (Array.isArray(c.gpuUuids) ? c.gpuUuids : []).map(lower),
    hostname: typeof c.hostname === 'string' ? c.hostname : '',
    vendor: typeof c.sysVendor === 'string' ? c.sysVendor.trim() : '',
    model: typeof c.productName === 'string' ? c.productName.trim() : '',
  };
  normalFacts.set(facts, n);
  return n;
}

type Compiled = (facts: RuleFacts) => boolean;

/**
 * A rule's conditions made once into one test (patterns compiled, lists normalized, subnets in a BlockList):
 * a batch weighs every join against every rule of its site, so nothing here is redone per join.
 */
function compile(match: RuleMatch): Compiled {
  const tests: ((n: NormalFacts, facts: RuleFacts) => boolean)[] = [];
  if (match.attestor !== undefined) tests.push((_, facts) => facts.attestor === match.attestor);
  if (match.macPrefixes?.length) {
    const prefixes = match.macPrefixes.map(hex).filter((p) => p.length > 0);
    tests.push((n) => n.mac !== '' && prefixes.some((p) => n.mac.startsWith(p)));
  }
  if (match.serials?.length) {
    const wanted = new Set(match.serials.map((v) => v.trim().toLowerCase()));
    tests.push((n) => n.serials.some((v) => wanted.has(v)));
  }
  if (match.productUuids?.length) {
    const wanted = new Set(match.productUuids.map(uuid));
    tests.push((n) => n.productUuid !== null && wanted.has(n.productUuid));
  }
  if (match.gpuUuids?.length) {
    const wanted = new Set(match.gpuUuids.map((g) => g.trim().toLowerCase()));
    tests.push((n) => n.gpuUuids.some((g) => g !== null && wanted.has(g)));
  }
  if (match.hostnamePattern !== undefined) {
    const pattern = globToRegExp(match.hostnamePattern);
    tests.push((n) => n.hostname !== '' && pattern.test(n.hostname));
  }
  if (match.vendors?.length) {
    const patterns = match.vendors.map((v) => globToRegExp(v.trim()));
    tests.push((n) => n.vendor !== '' && patterns.some((p) => p.test(n.vendor)));
  }
  if (match.models?.length) {
    const patterns = match.models.map((v) => globToRegExp(v.trim()));
    tests.push((n) => n.model !== '' && patterns.some((p) => p.test(n.model)));
  }
  if (match.subnets?.length) {
    const list = blockListOf(match.subnets);
    tests.push((n) => n.family !== 0 && list.check(n.ip!, n.family === 4 ? 'ipv4' : 'ipv6'));
  }
  if (match.vouchedBy?.length) {
    const wanted = new Set(match.vouchedBy);
    tests.push((_, facts) => facts.vouchedBy !== null && wanted.has(facts.vouchedBy));
  }
  if (!tests.length) return () => false;
  return (facts) => {
    const n = normalOf(facts);
    return tests.every((t) => t(n, facts));
  };
}

// Compiled rules, by the match object (one batch) and by its text (across batches: the rows are read anew).
const byObject = new WeakMap<RuleMatch, Compiled>();
const byText = new Map<string, Compiled>();
function compiledOf(match: RuleMatch): Compiled {
  let compiled = byObject.get(match);
  if (compiled) return compiled;
  const text = JSON.stringify(match);
  compiled = byText.get(text);
  if (!compiled) {
    if (byText.size >= 4_096) byText.clear();
    byText.set(text, (compiled = compile(match)));
  }
  byObject.set(match, compiled);
  return compiled;
}

/** Whether every condition the rule names holds for these facts. A rule that names none matches nothing. */
export function ruleMatches(match: RuleMatch, facts: RuleFacts): boolean {
  return compiledOf(match)(facts);
}

/**
 * The first rule (in the site's order) in force that matches: not past `validUntil`, and an approving rule
 * with admissions left (`used` counts this batch's admissions per rule on top of the stored count).
 */
export function firstMatchingRule(
  rules: readonly RuleInForce[],
  facts: RuleFacts,
  now: Date | null,
  used: ReadonlyMap<string, number>,
): RuleInForce | null {
  for (const rule of rules) {
    if (rule.enabled === false) continue;
    if (now && rule.validUntil && rule.validUntil <= now) continue;
    if (rule.action === 'approve' && rule.maxAdmissions !== null && rule.admissions + (used.get(rule.id) ?? 0) >= rule.maxAdmissions)
      continue;
    if (ruleMatches(rule.match, facts)) return rule;
  }
  return null;
}
