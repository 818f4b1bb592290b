import { z } from 'zod';

// Node labels (`key=value`): set at admission by the join token, approval rule, expected machine or approval that
// admitted the node, edited by operators later. They never reach the certificate and never change authorization.
// Shapes only: the console's client bundle imports this file.

/** At most this many labels on one node (and on one token, rule, expected machine or approval). */
const MAX_LABELS = 32;
/** A key: lower-case letters, digits, `.`, `_`, `-` and `/`, starting and ending with a letter or digit. */
const LABEL_KEY = /^[a-z0-9](?:[a-z0-9._/-]{0,61}[a-z0-9])?$/;
/** A value: printable, no `=`/`,` (they separate labels on a command line), at most 128 characters. */
const LABEL_VALUE = /^[^\p{Cc}=,]{0,128}$/u;

const labelKey = z.string().regex(LABEL_KEY, 'a label key: a-z, 0-9, . _ - /, at most 63 characters, starting and ending with a-z or 0-9');
const labelValue = z.string().regex(LABEL_VALUE, 'a label value: printable, no = or ",", at most 128 characters');

/** A set of labels, as every API takes and returns them: `{ "rack": "c7", "env": "prod" }`. */
export const labelsSchema = z
  .record(labelKey, labelValue)
  .refine((labels) => Object.keys(labels).length <= MAX_LABELS, { message: `at most ${MAX_LABELS} labels` });

/** One `key=value` (a filter, a CLI's `--label`), parsed; null when it is not one. */
export function parseLabelArgument(text: string): { key: string; value: string } | null {
  const at = text.indexOf('=');
  if (at <= 0) return null;
  const key = text.slice(0, at);
  const value = text.slice(at + 1);
  return LABEL_KEY.test(key) && LABEL_VALUE.test(value) ? { key, value } : null;
}

/** A label filter's `key=value`, as query parameters and tRPC inputs take it. */
export const labelSelector = z
  .string()
  .max(200)
  .refine((text) => parseLabelArgument(text) !== null, { message: 'a label as key=value' });

/**
 * The labels a node gets from several sources, lowest first (the join's token, then an approval rule, an
 * expected machine, an approval): a later source's key overrides an earlier one's.
 */
export function mergeLabels(...sources: ReadonlyArray<Readonly<Record<string, string>> | null | undefined>): Record<string, string> {
  const merged: Record<string, string> = {};
  for (const source of sources) if (source) for (const [key, value] of Object.entries(source)) merged[key] = value;
  return merged;
}

/**
 * Labels written as one text, `k=v;k2=v2` (an import's `labels` column; `,` also separates, outside a CSV);
 * blank: none. Answers the labels, or the first part that is not a `key=value`.
 */
export function parseLabelList(text: string): { labels: Record<string, string> } | { invalid: string } {
  const labels: Record<string, string> = {};
  for (const part of text.split(/[;,]/)) {
    const item = part.trim();
    if (!item) continue;
    const parsed = parseLabelArgument(item);
    if (!parsed) return { invalid: item };
    labels[parsed.key] = parsed.value;
  }
  return { labels };
}

/** Labels as one text, `k=v;k2=v2`, keys sorted (what parseLabelList reads back). */
export const formatLabelList = (labels: Readonly<Record<string, string>>) =>
  Object.keys(labels)
    .sort()
    .map((key) => `${key}=${labels[key]}`)
    .join(';');

/** A change of a node's labels: `set` adds or overrides keys, `remove` drops keys (after `set`); `replace`: `set` is the whole set. */
export interface LabelChange {
  set: Readonly<Record<string, string>>;
  remove: readonly string[];
  replace: boolean;
}

/** The labels after `change`; whether the result stays within the bounds is the caller's check (labelsSchema). */
export function applyLabelChange(current: Readonly<Record<string, string>>, change: LabelChange): Record<string, string> {
  const next = change.replace ? { ...change.set } : mergeLabels(current, change.set);
  for (const key of change.remove) delete next[key];
  return next;
}
