import { InvalidArgumentError } from 'commander';

/** A commander parser for a whole-number option from `min` to `max`. */
export function wholeNumber(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`use a whole number from ${min} to ${max.toLocaleString('en-US')}`);
    }
    return n;
  };
}
