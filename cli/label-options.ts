import { InvalidArgumentError } from 'commander';
import { parseLabelArgument } from '../protocol/api/labels';

/**
 * A repeatable `--label k=v` (commander's collect parser): each value is checked here, so a bad label fails
 * before any request; the server checks the set's bounds again.
 */
export function collectLabel(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const label = parseLabelArgument(value);
  if (!label)
    throw new InvalidArgumentError(
      `${JSON.stringify(value)} is not a label: use key=value, the key of a-z, 0-9, . _ - / (at most 63), the value without = or ","`,
    );
  return { ...previous, [label.key]: label.value };
}

/** The request field for collected labels: absent when none was given. */
export const labelsField = (labels: Record<string, string> | undefined) => (labels && Object.keys(labels).length ? { labels } : {});
