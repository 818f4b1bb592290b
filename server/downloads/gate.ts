import type http from 'node:http';
import { answerLater } from '../http/answer-later';
import { addressBucket } from '../../protocol/address-bucket';
import type { SharedRateLimit } from '../http/shared-rate-limit';

/** The per-process bounds of the downloads (request-limits.ts reads them from the environment). */
interface DownloadBounds {
  /** Downloads answered at once by this process; past it, 503 with retry-after. */
  maxConcurrent: number;
  /** A download whose client takes nothing for this long is closed. */
  idleMs: number;
}

/** How long a client told "busy" waits before it tries again. */
const BUSY_RETRY_SECONDS = 5;

/**
 * What stands before a bcd download (serve.ts): at most `maxConcurrent` downloads at once in this process
 * (503 past it: the server is busy, whoever asks), a shared limit per client address (429 past it, with the
 * seconds until the address's window ends), and an idle bound while the file streams: a client that stops
 * reading holds a file descriptor and a slot only until `idleMs` passes without a byte moving.
 */
export class DownloadGate {
  private active = 0;

  constructor(
    private readonly perAddress: SharedRateLimit,
    private readonly bounds: DownloadBounds,
  ) {}

  /** Downloads under way in this process. */
  get inFlight() {
    return this.active;
  }

  async serve(req: http.IncomingMessage, res: http.ServerResponse, address: string, download: () => Promise<void>): Promise<void> {
    if (this.active >= this.bounds.maxConcurrent)
      return answerLater(res, 503, BUSY_RETRY_SECONDS, 'Too many downloads are under way; retry later');
    // The slot is taken before the database is asked, so calls that arrive together cannot all pass the cap.
    this.active += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.active -= 1;
    };
    res.once('close', release);
    try {
      const verdict = await this.perAddress.hit(addressBucket(address));
      if (!verdict.allowed) {
        return answerLater(
          res,
          429,
          verdict.retryAfterSeconds,
          `Too many downloads from this address; retry after ${verdict.retryAfterSeconds} seconds`,
        );
      }
      if (res.destroyed) return;
      res.setTimeout(this.bounds.idleMs, () => res.destroy());
      await download();
    } finally {
      if (res.writableEnded || res.destroyed) release();
    }
  }
}
