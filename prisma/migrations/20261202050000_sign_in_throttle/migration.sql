-- A printed password (the first admin's, or one from `operators reset-password --local`) only lets its owner
-- choose a new one: every other console page and API call of that session is refused until then.
ALTER TABLE "operators" ADD COLUMN "password_change_required" BOOLEAN NOT NULL DEFAULT false;

-- Failed sign-ins, counted per (account, client address) with backoff and per account with a higher
-- ceiling, so a stranger's guesses from one address never lock the right password out from another.
-- Keys are hashes: the table holds no email address and no client address.
CREATE TABLE "sign_in_throttles" (
  "key" TEXT PRIMARY KEY,
  "failures" INTEGER NOT NULL DEFAULT 0,
  "window_start" TIMESTAMPTZ(6) NOT NULL,
  "last_failure_at" TIMESTAMPTZ(6),
  "blocked_until" TIMESTAMPTZ(6)
);

-- One attempt, decided and counted atomically before the password is checked (both rows locked, the
-- account's first, so concurrent attempts take turns and never deadlock). An allowed attempt counts as a
-- failure until the caller clears it on success (sign_in_succeeded): parallel guesses cannot slip past.
--   pair:    p_free failures are free; each further one blocks the pair for p_base * 2^(n - p_free), at most
--            p_max; a pair without a failure for p_forget starts over.
--   account: at most p_ceiling failures per p_window from all addresses together.
CREATE FUNCTION sign_in_attempt(
  p_account TEXT, p_pair TEXT,
  p_free INTEGER, p_base INTERVAL, p_max INTERVAL, p_forget INTERVAL,
  p_ceiling INTEGER, p_window INTERVAL,
  OUT allowed BOOLEAN, OUT retry_after_seconds INTEGER)
LANGUAGE plpgsql AS $$
DECLARE
  t TIMESTAMPTZ := compute_now();
  acct sign_in_throttles;
  pair sign_in_throttles;
BEGIN
  INSERT INTO sign_in_throttles (key, failures, window_start) VALUES (p_account, 0, t) ON CONFLICT (key) DO NOTHING;
  INSERT INTO sign_in_throttles (key, failures, window_start) VALUES (p_pair, 0, t) ON CONFLICT (key) DO NOTHING;
  SELECT * INTO acct FROM sign_in_throttles WHERE key = p_account FOR UPDATE;
  SELECT * INTO pair FROM sign_in_throttles WHERE key = p_pair FOR UPDATE;
  IF acct.window_start <= t - p_window THEN
    acct.failures := 0;
    acct.window_start := t;
  END IF;
  IF pair.last_failure_at IS NOT NULL AND pair.last_failure_at <= t - p_forget THEN
    pair.failures := 0;
    pair.blocked_until := NULL;
  END IF;
  retry_after_seconds := 0;
  IF pair.blocked_until IS NOT NULL AND pair.blocked_until > t THEN
    allowed := false;
    retry_after_seconds := ceil(extract(epoch FROM pair.blocked_until - t));
  ELSIF acct.failures >= p_ceiling THEN
    allowed := false;
    retry_after_seconds := ceil(extract(epoch FROM acct.window_start + p_window - t));
  ELSE
    allowed := true;
    acct.failures := acct.failures + 1;
    pair.failures := pair.failures + 1;
    pair.last_failure_at := t;
    IF pair.failures >= p_free THEN
      pair.blocked_until := t + LEAST(p_max, p_base * power(2, pair.failures - p_free));
    END IF;
  END IF;
  UPDATE sign_in_throttles SET failures = acct.failures, window_start = acct.window_start WHERE key = p_account;
  UPDATE sign_in_throttles SET failures = pair.failures, last_failure_at = pair.last_failure_at, blocked_until = pair.blocked_until
   WHERE key = p_pair;
END;
$$;

-- The earlier per-email lock's counters; the throttle above replaces them.
DELETE FROM "rate_limits" WHERE "key" LIKE 'sign-in-failures:%';
