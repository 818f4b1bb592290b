import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';

export type Db = PrismaClient;
/** The client or an interactive transaction's client: domain functions that write take this. */
export type Tx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

export function createDb(databaseUrl: string, options: { max?: number } = {}): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: options.max ?? 20 });
  return new PrismaClient({ adapter });
}

const globalForDb = globalThis as unknown as { betterComputeDb?: Db };

/** The process-wide client for DATABASE_URL (set by the boot process, or by the operator). */
export function getDb(): Db {
  if (!globalForDb.betterComputeDb) {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set: start the server with `npm start`, which provides it');
    globalForDb.betterComputeDb = createDb(url);
  }
  return globalForDb.betterComputeDb;
}
