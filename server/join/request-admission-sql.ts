/**
 * Serializes the new join requests of a site across every API instance, so that the cap on pending requests
 * holds under concurrency: a transaction-level advisory lock per site, taken in the sorted order the caller
 * passes the sites in (two batches cannot deadlock) and after the tokens' and nodes' row locks, which every
 * batch takes first. It is its own statement, sent before SELECT_SITE_QUEUES counts the pending requests: a
 * statement that waited for the lock would count with its older snapshot. Every deferring attestor's rows
 * (its rules, its requests) are read after it, under the same lock.
 */
export const LOCK_SITE_QUEUES = `
SELECT pg_advisory_xact_lock(hashtextextended('join-requests:' || s.site, 0))
  FROM (SELECT site FROM unnest($1::text[]) WITH ORDINALITY AS u(site, ord) ORDER BY ord) s`;

/**
 * Each site's live pending requests (every attestor's, counted under LOCK_SITE_QUEUES) and its stored
 * `discovery` settings, where the site's `maxPendingRequests` lives.
 */
export const SELECT_SITE_QUEUES = `
SELECT s.id, s.discovery,
       (SELECT count(*) FROM join_requests j WHERE j.site_id = s.id AND j.state = 'pending' AND j.expires_at > compute_now())::int AS pending
  FROM sites s WHERE s.id = ANY($1::text[])`;

/**
 * Locks the rate-limit rows of the batch's keys (in the sorted order the caller passes them in, after the
 * site locks) and answers how many new requests each window already holds: a row is made when missing, and a
 * window older than `$2` starts again at the database's now (as `rate_limit_hit` does).
 */
export const LOCK_REQUEST_RATES = `
INSERT INTO rate_limits AS r (key, window_start, count, suppressed)
SELECT k, compute_now(), 0, 0 FROM unnest($1::text[]) WITH ORDINALITY AS u(k, ord) ORDER BY ord
ON CONFLICT (key) DO UPDATE
   SET window_start = CASE WHEN r.window_start <= compute_now() - $2::interval THEN compute_now() ELSE r.window_start END,
       count = CASE WHEN r.window_start <= compute_now() - $2::interval THEN 0 ELSE r.count END
RETURNING key, count`;

/** Counts the batch's new requests into the windows LOCK_REQUEST_RATES locked. */
export const COUNT_REQUEST_RATES = `
UPDATE rate_limits r SET count = r.count + u.n FROM unnest($1::text[], $2::int[]) AS u(k, n) WHERE r.key = u.k`;

/**
 * One `rate_limit_hit` per key, in the order given (the caller sorts them, so two batches lock in one order):
 * whether each hit had room. $1 keys (one per challenge, repeated), $2 limit, $3 window.
 */
export const HIT_CHALLENGE_RATES = `
SELECT u.ord, h.allowed
  FROM (SELECT k, ord FROM unnest($1::text[]) WITH ORDINALITY AS u(k, ord) ORDER BY ord) u
 CROSS JOIN LATERAL rate_limit_hit(u.k, $2::int, $3::interval) h
 ORDER BY u.ord`;
