import { randomInt } from 'node:crypto';

/** A seeded generator (mulberry32): the same seed gives the same sequence, so a failing run can be replayed. */
export interface SeededRandom {
  seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
}

export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return { seed, next, int, pick: (items) => items[int(0, items.length - 1)]!, chance: (p) => next() < p };
}

/**
 * The seed of a reliability run: `RELIABILITY_SEED` when set (to replay a run), else a new one. The caller
 * prints it, so any failure can be reproduced with `RELIABILITY_SEED=<seed> npx vitest run <file>`.
 */
export function runSeed(): number {
  const configured = process.env.RELIABILITY_SEED;
  if (configured) {
    const seed = Number(configured);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
      throw new Error(`RELIABILITY_SEED must be an integer from 0 to 4294967295, not ${configured}`);
    return seed;
  }
  return randomInt(0, 0xffffffff);
}
