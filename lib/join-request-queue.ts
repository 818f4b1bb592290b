import type { RequestFilter } from '@/protocol/api/join-request-filter';
import type { JoinRequestRecord, JoinRequestState } from '@/protocol/api/join-request-schemas';
import { parseLifetime } from './duration';

/** The queue's state filter, kept in the URL (`?state=`); `pending` when absent. */
export const QUEUE_FILTERS = ['pending', 'approved', 'rejected', 'expired', 'consumed', 'all'] as const;
export type QueueFilter = (typeof QUEUE_FILTERS)[number];
export function toQueueFilter(value: string | null): QueueFilter {
  return (QUEUE_FILTERS as readonly string[]).includes(value ?? '') ? (value as QueueFilter) : 'pending';
}

/** Approval lifetimes offered as one click (joining.md: 60 s to 24 h, one hour by default). */
export const TTL_PRESETS = [
  { label: '15 min', seconds: 900 },
  { label: '1 h', seconds: 3_600 },
  { label: '4 h', seconds: 14_400 },
  { label: '24 h', seconds: 86_400 },
] as const;

/** The keyboard shortcuts of the queue, as `?` lists them. */
export const QUEUE_SHORTCUTS = [
  { key: 'j', does: 'Move to the next request' },
  { key: 'k', does: 'Move to the previous request' },
  { key: 'x', does: 'Select or unselect the current request' },
  { key: 'a', does: 'Approve the selection (or the current request)' },
  { key: 'r', does: 'Reject the selection (or the current request)' },
  { key: '?', does: 'Show this list' },
] as const;

/** The claims a row shows, in a fixed order and with labels; arrays are listed whole. */
const CLAIM_LABELS: [key: string, label: string][] = [
  ['hostname', 'Hostname'],
  ['productUuid', 'Product UUID'],
  ['productSerial', 'Product serial'],
  ['boardSerial', 'Board serial'],
  ['chassisSerial', 'Chassis serial'],
  ['macs', 'MAC'],
  ['gpuUuids', 'GPU'],
  ['sysVendor', 'Vendor'],
  ['productName', 'Model'],
];

export function claimEntries(claims: Record<string, unknown>): { key: string; label: string; value: string }[] {
  const entries: { key: string; label: string; value: string }[] = [];
  for (const [key, label] of CLAIM_LABELS) {
    const value = claims[key];
    const values = Array.isArray(value) ? value : value === undefined || value === null || value === '' ? [] : [value];
    values.forEach((v, i) => entries.push({ key: `${key}-${i}`, label, value: String(v) }));
  }
  return entries;
}

/**
 * The selection after a click on the checkbox of `target`. A plain click toggles it and becomes the
 * anchor; a shift-click sets every row between the anchor and the target to the state of the anchor's
 * row (as in mail clients), so a range is selected or cleared in one gesture.
 */
export function clickSelection(
  order: readonly string[],
  selected: ReadonlySet<string>,
  anchor: string | null,
  target: string,
  shift: boolean,
): Set<string> {
  const next = new Set(selected);
  const from = anchor ? order.indexOf(anchor) : -1;
  const to = order.indexOf(target);
  if (!shift || from < 0 || to < 0) {
    if (next.has(target)) next.delete(target);
    else next.add(target);
    return next;
  }
  const select = selected.has(anchor!);
  for (let i = Math.min(from, to); i <= Math.max(from, to); i++) {
    if (select) next.add(order[i]!);
    else next.delete(order[i]!);
  }
  return next;
}

/**
 * The rows to show: the list as read, plus the requests this page saw decided (here or by someone else)
 * that the filter no longer lists, so a decision shows where the row was instead of the row vanishing.
 * A known decision wins over a list that still says pending (read before the decision). Newest first.
 */
export function mergeRows(items: readonly JoinRequestRecord[], known: ReadonlyMap<string, JoinRequestRecord>): JoinRequestRecord[] {
  const byId = new Map(items.map((item) => [item.id, item]));
  for (const [id, record] of known) {
    const listed = byId.get(id);
    if (!listed || (listed.state === 'pending' && record.state !== 'pending')) byId.set(id, record);
  }
  return [...byId.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
}

const DECIDED_WORD: Record<JoinRequestState, string> = {
  pending: 'still pending',
  approved: 'approved',
  rejected: 'rejected',
  expired: 'expired',
  consumed: 'consumed (the machine joined)',
};

/** Why an action on `record` did nothing: it was decided meanwhile, by whom and when, in words. */
export function decidedElsewhere(record: JoinRequestRecord, action: 'approve' | 'reject'): string {
  const who = record.decidedBy ? ` by ${record.decidedByName ?? record.decidedBy}` : '';
  const when = record.decidedAt ? ` at ${record.decidedAt.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}` : '';
  const why = record.reason ? ` (“${record.reason}”)` : '';
  return `Request ${record.id} was already ${DECIDED_WORD[record.state]}${record.state === 'approved' || record.state === 'rejected' ? `${who}${when}${why}` : ''}: it cannot be ${action === 'approve' ? 'approved' : 'rejected'} now. Nothing was changed.`;
}

/** Whether a key press is meant for a field rather than for the queue's shortcuts. */
export function isTypingTarget(target: EventTarget | null): boolean {
  if (!target || typeof (target as HTMLElement).tagName !== 'string') return false;
  const element = target as HTMLElement;
  // A checkbox just clicked keeps the focus; the shortcuts still apply to it.
  if (element.tagName === 'INPUT' && ['checkbox', 'radio'].includes((element as HTMLInputElement).type))
    return element.closest('dialog[open]') !== null;
  return element.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(element.tagName) || element.closest('dialog[open]') !== null;
}

/** What the pool picker needs of a pool (a `pools.list` item). */
interface PickablePool {
  id: string;
  siteId: string;
  agent: string;
  archivedAt: string | null;
  policy: { joinAttestors?: readonly string[] };
}

/**
 * The pools an approval of `requests` may be made into: the ones whose approved retry the join would admit.
 * A pool qualifies when its machines run the daemon, it is not archived, it is in the site of every request,
 * and its `policy.joinAttestors` (absent: every attestor) lists the attestor of every request. The server
 * refuses the others (INVALID_STATE); the picker does not offer them.
 */
export function approvablePools<P extends PickablePool>(
  pools: readonly P[],
  requests: readonly (Pick<JoinRequestRecord, 'siteId' | 'attestor'> & Partial<Pick<JoinRequestRecord, 'state' | 'firstApproval'>>)[],
): P[] {
  const sites = new Set(requests.map((r) => r.siteId));
  const attestors = new Set(requests.map((r) => r.attestor));
  // A second approval (two-person sites) must choose the pool the first approver chose.
  const firstPools = new Set(requests.flatMap((r) => (r.state === 'pending' && r.firstApproval?.poolId ? [r.firstApproval.poolId] : [])));
  return pools.filter(
    (pool) =>
      pool.agent === 'bcd' &&
      !pool.archivedAt &&
      [...firstPools].every((first) => first === pool.id) &&
      [...sites].every((site) => site === pool.siteId) &&
      [...attestors].every((attestor) => !pool.policy.joinAttestors || pool.policy.joinAttestors.includes(attestor)),
  );
}

/** The queue's search and filters as URL parameters (`?q=…&attestor=…&trusted=yes&olderThan=1h`). */
export const QUEUE_FILTER_PARAMS = ['q', 'attestor', 'vouchedBy', 'trusted', 'olderThan', 'newerThan'] as const;
export type QueueFilterParams = Record<(typeof QUEUE_FILTER_PARAMS)[number], string | null>;

/** The attestors that defer joins to an operator, as the attestor filter offers them. */
export const DEFERRING_ATTESTORS = ['discovery', 'tpm'] as const;

/**
 * The server's filter (RequestFilter) from the URL's parameters. What cannot be read (an age that is not a
 * duration, a `trusted` other than yes/no) is left out rather than sent to fail, and listed in `ignored` so
 * the page can say so.
 */
export function queueFilterOf(params: QueueFilterParams): { filter: RequestFilter; ignored: string[] } {
  const filter: RequestFilter = {};
  const ignored: string[] = [];
  const q = params.q?.trim();
  if (q) filter.search = q.slice(0, 200);
  if (params.attestor) {
    if (/^[a-z0-9-]{1,64}$/.test(params.attestor)) filter.attestor = params.attestor;
    else ignored.push('attestor');
  }
  if (params.vouchedBy) filter.vouchedBy = params.vouchedBy.slice(0, 200);
  if (params.trusted === 'yes') filter.trustedKey = true;
  else if (params.trusted === 'no') filter.trustedKey = false;
  else if (params.trusted) ignored.push('trusted');
  for (const [name, field] of [
    ['olderThan', 'minAgeSeconds'],
    ['newerThan', 'maxAgeSeconds'],
  ] as const) {
    const text = params[name];
    if (!text) continue;
    const seconds = parseLifetime(text);
    if (Number.isFinite(seconds) && seconds <= 31_622_400) filter[field] = seconds;
    else ignored.push(name);
  }
  return { filter, ignored };
}

/** Whether any filter narrows the queue (the count then reads "matching"). */
export const isFiltered = (filter: RequestFilter) => Object.keys(filter).length > 0;

/**
 * One line that names a machine in a dense row (cut with an ellipsis, whole on hover): hostname, a serial,
 * the product UUID, the first MAC and how many more; every claim is in the detail panel.
 */
export function machineSummary(claims: Record<string, unknown>): string {
  const text = (key: string) => (typeof claims[key] === 'string' && claims[key] ? (claims[key] as string) : null);
  const macs = Array.isArray(claims.macs) ? (claims.macs as unknown[]).filter((m): m is string => typeof m === 'string') : [];
  const mac = macs.length > 1 ? `${macs[0]} +${macs.length - 1}` : (macs[0] ?? null);
  const model = [text('sysVendor'), text('productName')].filter(Boolean).join(' ') || null;
  return [text('hostname'), text('productSerial') ?? text('boardSerial') ?? text('chassisSerial'), text('productUuid'), mac, model]
    .filter(Boolean)
    .join(' · ');
}

/** The one wording of hardware-key trust, on requests and nodes alike. */
export function hardwareKeyWording(
  hasKey: boolean,
  isTrusted: boolean,
  isRamdisk = false,
): { label: string; tone: 'info' | 'warn' | 'none'; title: string } {
  // A ramdisk's node keeps the key untrusted on purpose, so the installed OS can claim the machine later.
  if (isRamdisk && !isTrusted)
    return {
      label: 'key left to the OS',
      tone: 'none',
      title: 'A ramdisk never claims the machine’s hardware key: the installed OS joins with it',
    };
  if (isTrusted) return { label: 'trusted key', tone: 'info', title: 'At least two independent identifiers made the hardware key' };
  if (hasKey) return { label: 'untrusted key', tone: 'warn', title: 'Fewer than two identifiers made the hardware key' };
  return { label: 'no key', tone: 'none', title: 'No identifier survived to make a hardware key' };
}

/** Every URL parameter the queue page reads: the pool, the state filter, a request to show first, the search and filters. */
export const QUEUE_PARAMS = ['pool', 'state', 'request', ...QUEUE_FILTER_PARAMS] as const;

/** How many requests a page of the queue holds. */
const QUEUE_PAGE_SIZE = 100;

/** The pools a request can be approved into: their machines run the daemon and they are not archived. */
export function joinablePools<P extends Pick<PickablePool, 'agent' | 'archivedAt'>>(pools: readonly P[]): P[] {
  return pools.filter((pool) => pool.agent === 'bcd' && !pool.archivedAt);
}

/** The pool whose queue the page shows: `?pool=` (undefined when it is not one of `joinable`), else the first. */
export function queuePoolOf<P extends { id: string }>(joinable: readonly P[], poolParam: string | null): P | undefined {
  return poolParam ? joinable.find((p) => p.id === poolParam) : joinable[0];
}

/**
 * The first page's input of the queue's `joinRequests.list` (the infinite query's key), from the pool, the state
 * filter and the search and filters (`toQueueFilter` and `queueFilterOf` of the URL). The page in the browser
 * and the server's prefetch (app/(console)/page-readers.ts) both build it here, so the query the
 * server reads ahead is the one the page asks for.
 */
export function queueListInput(ref: { tenantId: string; poolId: string }, state: QueueFilter, matching: RequestFilter) {
  return { ...ref, state, limit: QUEUE_PAGE_SIZE, ...matching };
}

/** The cursor of the queue's next page, or none (the infinite query's `getNextPageParam`). */
export const nextQueuePage = (page: { nextCursor: string | null }) => page.nextCursor ?? undefined;
