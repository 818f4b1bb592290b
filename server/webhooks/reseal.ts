import type { Db } from '../db/client';
import { openWebhookSecret, sealWebhookSecret } from './secret';

/** What {@link resealWebhookSecrets} found and changed. */
interface WebhookReseal {
  /** Subscriptions whose secret opened only under the previous secret and is now sealed under the current one. */
  resealed: number;
  /** Subscriptions already sealed under the current secret, or changed meanwhile by someone else (another start). */
  current: number;
  /** Ids of the subscriptions whose secret opens under neither secret: left as they are. */
  unreadable: string[];
}

const opens = (sealed: Uint8Array, id: string, secret: string) => {
  try {
    return openWebhookSecret(sealed, id, [secret]);
  } catch {
    return null;
  }
};

/**
 * Moves every webhook signing secret that opens only under `previousSecret` (the old BETTER_COMPUTE_SECRET) to a
 * seal under `secret`, on start, so the previous secret can be unset afterwards. The plaintext is unchanged:
 * receivers keep verifying with the secret they were given.
 *
 * Subscriptions are read in id order, `batchSize` at a time; each batch's new seals are written in ONE
 * transaction of compare-and-swap UPDATEs (`WHERE sealed_secret = <the bytes read>`). A failure rolls the batch
 * back, so every subscription is sealed either under the old secret or under the new one, and opens under one of
 * the two; the next start carries on. Several instances starting at once each write only the rows still holding
 * the bytes they read: a row another start (or a secret rotation) wrote first matches nothing and is left alone,
 * so every re-seal is counted once across them. A row that opens under neither secret is not touched.
 */
export async function resealWebhookSecrets(
  db: Db,
  options: { secret: string; previousSecret: string; batchSize?: number },
): Promise<WebhookReseal> {
  const { secret, previousSecret } = options;
  const batchSize = options.batchSize ?? 200;
  const result: WebhookReseal = { resealed: 0, current: 0, unreadable: [] };
  for (let after = ''; ;) {
    const rows = await db.webhookSubscription.findMany({
      where: { id: { gt: after } },
      orderBy: { id: 'asc' },
      take: batchSize,
      select: { id: true, sealedSecret: true },
    });
    if (!rows.length) return result;
    after = rows.at(-1)!.id; // rows is not empty
    const moves: { id: string; old: (typeof rows)[number]['sealedSecret']; sealed: Buffer }[] = [];
    for (const row of rows) {
      if (opens(row.sealedSecret, row.id, secret) !== null) {
        result.current++;
        continue;
      }
      const plain = opens(row.sealedSecret, row.id, previousSecret);
      if (plain === null) result.unreadable.push(row.id);
      else moves.push({ id: row.id, old: row.sealedSecret, sealed: sealWebhookSecret(plain, row.id, secret) });
    }
    if (!moves.length) continue;
    const written = await db.$transaction(
      moves.map((m) =>
        db.webhookSubscription.updateMany({ where: { id: m.id, sealedSecret: m.old }, data: { sealedSecret: new Uint8Array(m.sealed) } }),
      ),
    );
    const count = written.reduce((sum, w) => sum + w.count, 0);
    result.resealed += count;
    // The rest were changed between the read and the write: re-sealed by another start or rotated (both under
    // the current secret), or deleted.
    result.current += moves.length - count;
  }
}
