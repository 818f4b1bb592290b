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
export const MATCH_SOURCES: Record<keyof RuleMatch, 'vouched' | 'claimed'> = {
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
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'i');
}

function inSubnets(ip: string | null, subnets: string[]): boolean {
  const family = ip ? isIP(ip) : 0;
  if (!family) return false;
  const list = new BlockList();
  for (const block of subnets) {
    const [address, bits] = block.split('/');
    const kind = isIP(address ?? '');
    if (kind) list.addSubnet(address!, Number(bits ?? (kind === 4 ? 32 : 128)), kind === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(ip!, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether every condition the rule names holds for these facts. A rule that names none matches nothing. */
export function ruleMatches(match: RuleMatch, facts: RuleFacts): boolean {
  let named = 0;
  const c = facts.claims;
  if (match.attestor !== undefined) {
    named++;
    if (facts.attestor !== match.attestor) return false;
  }
  if (match.macPrefixes?.length) {
    named++;
    const mac = facts.vouchedMac ? hex(facts.vouchedMac) : '';
    if (!mac || !match.macPrefixes.some((prefix) => hex(prefix).length > 0 && mac.startsWith(hex(prefix)))) return false;
  }
  if (match.serials?.length) {
    named++;
    const claimed = [c.productSerial, c.boardSerial, c.chassisSerial].map(lower).filter((s): s is string => !!s);
    if (!match.serials.some((s) => claimed.includes(s.trim().toLowerCase()))) return false;
  }
  if (match.productUuids?.length) {
    named++;
    const claimed = uuid(c.productUuid);
    if (!claimed || !match.productUuids.some((u) => uuid(u) === claimed)) return false;
  }
  if (match.gpuUuids?.length) {
    named++;
    const claimed = (Array.isArray(c.gpuUuids) ? c.gpuUuids : []).map(lower);
    if (!match.gpuUuids.some((g) => claimed.includes(g.trim().toLowerCase()))) return false;
  }
  if (match.hostnamePattern !== undefined) {
    named++;
    const host = typeof c.hostname === 'string' ? c.hostname : '';
    if (!host || !globToRegExp(match.hostnamePattern).test(host)) return false;
  }
  if (match.vendors?.length) {
    named++;
    const vendor = typeof c.sysVendor === 'string' ? c.sysVendor.trim() : '';
    if (!vendor || !match.vendors.some((p) => globToRegExp(p.trim()).test(vendor))) return false;
  }
  if (match.models?.length) {
    named++;
    const model = typeof c.productName === 'string' ? c.productName.trim() : '';
    if (!model || !match.models.some((p) => globToRegExp(p.trim()).test(model))) return false;
  }
  if (match.subnets?.length) {
    named++;
    if (!inSubnets(facts.vouchedIp, match.subnets)) return false;
  }
  if (match.vouchedBy?.length) {
    named++;
    if (!facts.vouchedBy || !match.vouchedBy.includes(facts.vouchedBy)) return false;
  }
  return named > 0;
}

/**
 * The first rule (in the site's order) in force that matches: not past `validUntil`, and an approving rule
 * with admissions left (`used` counts this batch's admissions per rule on top of the stored count).
 */
export function firstMatchingRule(rules: readonly RuleInForce[], facts: RuleFacts, now: Date | null, used: ReadonlyMap<string, number>): RuleInForce | null {
  for (const rule of rules) {
    if (rule.enabled === false) continue;
    if (now && rule.validUntil && rule.validUntil <= now) continue;
    if (rule.action === 'approve' && rule.maxAdmissions !== null && rule.admissions + (used.get(rule.id) ?? 0) >= rule.maxAdmissions) continue;
    if (ruleMatches(rule.match, facts)) return rule;
  }
  return null;
}
