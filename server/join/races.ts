/**
 * Which trusted machines other batches admitted while a join was in this server. One process admits its
 * batches one after another, so two joins of one machine sent together can land in consecutive batches
 * instead of one transaction; the second would then find the first one's node and be taken for a machine
 * joining again (a reclaim, or a `join:reclaim` refusal). A join that was already here when another
 * batch admitted its machine raced that join: it answers CONFLICT, as the two would have in one batch (or
 * as overlapping transactions of two instances do, through the unique index on the hardware key).
 *
 * A join `enter`s when its request arrives and `leave`s with its answer; `record` is called once per
 * finished batch with the trusted keys (hex) it admitted. Only batches some join still in flight may ask
 * about are kept.
 */
export class RaceWindow {
  private completed = 0;
  private readonly admitted: { seq: number; keys: Set<string> }[] = [];
  /** Joins in flight by the number of batches completed when they arrived; keys ascend in insertion order. */
  private readonly active = new Map<number, number>();

  /** A join arrived; returns its mark for `raced` and `leave`. */
  enter(): number {
    const since = this.completed;
    this.active.set(since, (this.active.get(since) ?? 0) + 1);
    return since;
  }

  leave(since: number): void {
    const left = (this.active.get(since) ?? 1) - 1;
    if (left > 0) this.active.set(since, left);
    else this.active.delete(since);
    this.trim();
  }

  /** A batch finished, having admitted these trusted keys. */
  record(keys: Iterable<string>): void {
    this.completed += 1;
    const set = new Set(keys);
    if (set.size) this.admitted.push({ seq: this.completed, keys: set });
    this.trim();
  }

  /** Whether a batch that finished after the join marked `since` arrived admitted `keyHex`. */
  raced(since: number, keyHex: string): boolean {
    for (let i = this.admitted.length - 1; i >= 0 && this.admitted[i]!.seq > since; i--) {
      if (this.admitted[i]!.keys.has(keyHex)) return true;
    }
    return false;
  }

  /** How many admitted batches are kept (for tests). */
  get retained(): number {
    return this.admitted.length;
  }

  private trim() {
    const oldest = this.active.keys().next();
    const horizon = oldest.done ? this.completed : oldest.value;
    let drop = 0;
    while (drop < this.admitted.length && this.admitted[drop]!.seq <= horizon) drop++;
    if (drop) this.admitted.splice(0, drop);
  }
}
