/**
 * How many password hashes (scrypt, 32 MiB each) one process runs at once, and how many of them one client
 * address may hold. A hash waits its turn in a short queue (its address's, then the process's); beyond a
 * queue it is refused at once (PasswordHashingBusyError), so a flood of password checks costs bounded memory,
 * and one address never holds more than its share of the process's slots while others wait behind it.
 */
export const PASSWORD_HASHING = {
  /** Hashes running at once in one process (libuv runs four by default): 4 × 32 MiB. */
  perProcess: 4,
  /** Hashes waiting for a process slot; more are refused. */
  queue: 32,
  /** Hashes one client address may have running (or waiting for a process slot) at once. */
  perAddress: 2,
  /** Hashes of one client address waiting behind its own running ones; more are refused. */
  perAddressQueue: 8,
} as const;

/** Too many password hashes at once (in this process, or from this client address); try again shortly. */
export class PasswordHashingBusyError extends Error {
  constructor(readonly scope: 'process' | 'address') {
    super('PasswordChecksBusy');
    this.name = 'PasswordHashingBusyError';
  }
}

/** A counting semaphore with a bounded queue; a finishing holder hands its slot straight to the first waiter. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly queue: number,
  ) {}

  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  /** Takes a slot, waiting if need be; false (nothing taken) when the queue is full. */
  async acquire(): Promise<boolean> {
    if (this.active < this.limit) {
      this.active++;
      return true;
    }
    if (this.waiting.length >= this.queue) return false;
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    return true;
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
}

/** The process's slots, and one semaphore per client address with hashes in flight (dropped when idle). */
class HashSlots {
  private readonly process: Semaphore;
  private readonly byAddress = new Map<string, Semaphore>();

  constructor(private readonly limits: typeof PASSWORD_HASHING) {
    this.process = new Semaphore(limits.perProcess, limits.queue);
  }

  /**
   * Runs `work` in a slot. `address` is the client's (the boot server's decision); without one (the CLI,
   * bootstrap) only the process's slots apply.
   *
   * @throws PasswordHashingBusyError when the address's queue or the process's queue is full.
   */
  async run<T>(address: string | undefined, work: () => Promise<T>): Promise<T> {
    let own: Semaphore | undefined;
    if (address) {
      own = this.byAddress.get(address) ?? new Semaphore(this.limits.perAddress, this.limits.perAddressQueue);
      this.byAddress.set(address, own);
      if (!(await own.acquire())) throw new PasswordHashingBusyError('address');
    }
    try {
      if (!(await this.process.acquire())) throw new PasswordHashingBusyError('process');
      try {
        return await work();
      } finally {
        this.process.release();
      }
    } finally {
      if (own && address) {
        own.release();
        if (own.idle) this.byAddress.delete(address);
      }
    }
  }
}

/** The process's password-hashing slots (server/operators/password.ts runs every scrypt in one). */
export const passwordHashing = new HashSlots(PASSWORD_HASHING);
