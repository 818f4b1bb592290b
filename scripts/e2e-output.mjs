// What scripts/e2e.mjs prints: its own lines, and the server's and Playwright's relayed line by line with every
// secret it has learnt (the first admin's passwords, the OpenID client secret) masked.
import { createInterface } from 'node:readline';

/** The secrets no relayed line may show. */
export const secrets = new Set();

export const redact = (text) => {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('********');
  return out;
};

export const log = (line) => process.stdout.write(`[e2e] ${line}\n`);

/** Relays a child's output line by line, masked; `onLine` sees the raw line first. */
export function relay(stream, target, prefix, onLine) {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
    onLine?.(line);
    target.write(`${prefix}${redact(line)}\n`);
  });
}
