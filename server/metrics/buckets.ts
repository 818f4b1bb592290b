/** Request latencies: a join or renewal answers in milliseconds; seconds mean a queue or a slow database. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Joins per admission transaction (JoinService batches at most 128). */
export const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128];
/** How long a join request waits for a decision: a minute to its 24-hour default expiry and beyond. */
export const WAIT_BUCKETS = [60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 48 * 3600];
/** The windows of `better_compute_node_certificates_expiring`. */
export const EXPIRY_WINDOWS = [
  ['1h', 3600],
  ['6h', 6 * 3600],
  ['24h', 24 * 3600],
] as const;
