import { parseLabelArgument } from '@/protocol/api/labels';
import type { NodeFilter } from '@/protocol/api/node-filter';
import { NODE_BULK_PAGE, type NodeBulkActionName, type NodeBulkResult } from '@/protocol/api/node-bulk-schemas';

/** What a bulk call sends besides its target: the action and, for set-labels, the labels. */
export interface BulkAction {
  action: NodeBulkActionName;
  set?: Record<string, string>;
  remove?: string[];
}

type BulkCall = (
  input: BulkAction & { tenantId: string; nodeIds?: string[]; matching?: NodeFilter; after?: string },
) => Promise<NodeBulkResult>;

/**
 * Runs a bulk action on the selected nodes (pages of 50 ids) or on every node the filter selects (the server's
 * pages, `after` the last one), reporting how many were handled after each page, as the queue's bulk decisions do.
 */
export async function runNodeBulk(
  send: BulkCall,
  target: { tenantId: string; nodeIds: string[] } | { tenantId: string; matching: NodeFilter },
  action: BulkAction,
  onProgress: (done: number) => void,
): Promise<NodeBulkResult> {
  const all: NodeBulkResult = { changed: [], unchanged: [], skipped: [], nextAfter: null };
  const add = (page: NodeBulkResult) => {
    all.changed.push(...page.changed);
    all.unchanged.push(...page.unchanged);
    all.skipped.push(...page.skipped);
    onProgress(all.changed.length + all.unchanged.length + all.skipped.length);
  };
  if ('nodeIds' in target) {
    for (let at = 0; at < target.nodeIds.length; at += NODE_BULK_PAGE)
      add(await send({ ...action, tenantId: target.tenantId, nodeIds: target.nodeIds.slice(at, at + NODE_BULK_PAGE) }));
    return all;
  }
  let after: string | undefined;
  for (;;) {
    const page = await send({ ...action, tenantId: target.tenantId, matching: target.matching, ...(after ? { after } : {}) });
    add(page);
    if (!page.nextAfter) return all;
    after = page.nextAfter;
  }
}

/** `rack=c7, env=prod` (commas or spaces between) as labels; the first entry that is not `key=value` is the error. */
export function parseLabelList(text: string): { labels: Record<string, string> } | { error: string } {
  const labels: Record<string, string> = {};
  for (const part of text.split(/[,\s]+/).filter(Boolean)) {
    const label = parseLabelArgument(part);
    if (!label) return { error: `“${part}” is not a label: use key=value` };
    labels[label.key] = label.value;
  }
  return { labels };
}

/** `old, tmp` as label keys to remove. */
export const parseKeyList = (text: string): string[] => text.split(/[,\s]+/).filter(Boolean);

/** The summary a finished bulk action shows, in words. */
export function bulkSummary(verb: string, count: number, result: NodeBulkResult): string {
  const parts = [`${verb} ${result.changed.length} of ${count} node${count === 1 ? '' : 's'}`];
  if (result.unchanged.length) parts.push(`${result.unchanged.length} already so`);
  if (result.skipped.length)
    parts.push(`${result.skipped.length} skipped (${result.skipped[0]!.reason}${result.skipped.length > 1 ? ', …' : ''})`);
  return `${parts.join('; ')}.`;
}
