import { MAX_COMMAND_OUTPUT_BYTES } from '../../protocol/command-wire';

const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/**
 * `output` as sent: itself when its JSON is at most `maxBytes` (MAX_COMMAND_OUTPUT_BYTES), else
 * `{ truncated: true, partial }` where `partial` is the longest prefix of its JSON text that keeps the whole
 * within `maxBytes` (escaping counted, never a lone half of a surrogate pair), so a result is never refused for
 * its size and never exceeds it.
 */
export function capOutput(output: Record<string, unknown>, maxBytes = MAX_COMMAND_OUTPUT_BYTES): Record<string, unknown> {
  if (size(output) <= maxBytes) return output;
  const text = JSON.stringify(output);
  const cut = (n: number) => {
    let prefix = text.slice(0, n);
    const last = prefix.charCodeAt(prefix.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) prefix = prefix.slice(0, -1);
    return { truncated: true, partial: prefix };
  };
  let low = 0;
  let high = Math.min(text.length, maxBytes);
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (size(cut(middle)) <= maxBytes) low = middle;
    else high = middle - 1;
  }
  return cut(low);
}
