/**
 * The most calls one batched tRPC request may carry (GET or POST): the server refuses more with 400 and the
 * console's batch link splits at it. Without a cap a single URL held 1,000 calls. Dependency-free, so the
 * browser bundle can import it.
 */
export const TRPC_MAX_BATCH_SIZE = 20;
