// Hours, minutes, seconds in that order, as the CLI's `--ttl` takes them; a bare number is seconds.
const DURATION = /^(?:(\d{1,5})h)?(?:(\d{1,5})m)?(?:(\d{1,6})s?)?$/;

/** `1h30m` → 5400, `90m` → 5400, `5400` → 5400; NaN for anything else (blank included). */
export function parseLifetime(text: string): number {
  const value = text.trim().toLowerCase().replace(/\s+/g, '');
  const match = DURATION.exec(value);
  if (!value || !match || (!match[1] && !match[2] && !match[3])) return Number.NaN;
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
}
