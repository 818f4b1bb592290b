/**
 * One hit on a request rate limit through the shared primitive `rate_limit_hit(key, limit, window)` (migration
 * 20261129020000_join_service), with how long until the key's window ends. The join reads `rate_limits` with
 * the statement's snapshot, before the function's own update: a refused hit never moves the window, so its
 * end is the right one; a key without a row (its first hit, which is allowed) gets the whole window.
 */
export const HIT_RATE_LIMIT = `
SELECT h.allowed,
       GREATEST(1, ceil(extract(epoch FROM (COALESCE(r.window_start, compute_now()) + $3::interval - compute_now()))))::int AS retry_after
  FROM rate_limit_hit($1::text, $2::int, $3::interval) h
  LEFT JOIN rate_limits r ON r.key = $1::text`;
