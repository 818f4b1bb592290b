import { defineConfig } from 'prisma/config';

// `prisma migrate deploy` reads DATABASE_URL; our own runner (server/db/migrate.ts) applies the same
// files where the schema engine is not available.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost/better_compute' },
});
