import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readMigrations } from '../../server/db/migrate';
import { expandOnlyViolations, type Rule } from './expand-only';

// Every migration must be expand-only from the previous release's point of view (the rule and what it forbids
// are in ./expand-only.ts and in docs/deployment.md, "Upgrading with no downtime"): during a rolling upgrade
// the previous release serves on the migrated database. The only exceptions are contract migrations, each
// listed in the "Contract migrations" table of docs/deployment.md, and the historical ones below.

/**
 * Migrations that break the rule and shipped before it was written (and before any rolling upgrade was
 * supported), with what each breaks and why it is tolerated. Closed: a new migration never goes here; it is
 * either expand-only or a documented contract migration.
 */
const SHIPPED_BEFORE_THE_RULE: Record<string, { rules: Rule[]; why: string }> = {
  '20261129030000_unique_certified_key': {
    rules: ['tighten'],
    why:
      'A unique index on node_certs.spki_sha256, an existing column: a release before it could have stored one key ' +
      'twice. Shipped on the first day; the release it followed never issued a second certificate for a key it had ' +
      'certified (the join refused a reused key), so no write of it was refused.',
  },
  '20261202050001_invitations': {
    rules: ['tighten'],
    why:
      'Drops the role checks of memberships and api_keys and adds them again with the new role (approver): a ' +
      'widening, which a checker reading statements cannot tell from a narrowing. Every role the previous ' +
      'release wrote is still admitted.',
  },
};

const DEPLOYMENT_DOC = new URL('../../docs/deployment.md', import.meta.url);

/** The migrations named in the "Contract migrations" table of docs/deployment.md (first column, in backticks). */
function documentedContractMigrations(): string[] {
  const doc = readFileSync(DEPLOYMENT_DOC, 'utf8');
  const section = /^### Contract migrations\n([\s\S]*?)(?=^#{1,3} )/m.exec(doc + '\n# end');
  if (!section) throw new Error('docs/deployment.md has no "### Contract migrations" section');
  return [...section[1]!.matchAll(/^\| `(\d{14}_[\w-]+)` \|/gm)].map((m) => m[1]!);
}

describe('migrations are expand-only', async () => {
  const migrations = await readMigrations();
  const contract = new Set(documentedContractMigrations());

  it.each(migrations.map((m) => [m.name, m.sql] as const))('%s', (name, sql) => {
    if (contract.has(name)) return;
    const found = expandOnlyViolations(sql);
    const tolerated = SHIPPED_BEFORE_THE_RULE[name];
    if (!tolerated) {
      expect(found, `${name} is not expand-only: make it so, or document it as a contract migration`).toEqual([]);
      return;
    }
    // A tolerated migration breaks exactly what its entry says (a wrong entry would hide a new rule break).
    expect([...new Set(found.map((v) => v.rule))].sort()).toEqual([...tolerated.rules].sort());
  });

  it('lists only migrations that exist, in the docs and in the historical list', () => {
    const names = new Set(migrations.map((m) => m.name));
    expect([...contract, ...Object.keys(SHIPPED_BEFORE_THE_RULE)].filter((n) => !names.has(n))).toEqual([]);
  });
});

describe('the expand-only checker', () => {
  const rulesOf = (sql: string) => expandOnlyViolations(sql).map((v) => v.rule);

  it.each<[string, Rule]>([
    ['DROP TABLE "nodes";', 'drop-table'],
    ['ALTER TABLE "nodes" DROP COLUMN "cordoned";', 'drop-column'],
    ['ALTER TABLE nodes DROP IF EXISTS cordoned;', 'drop-column'],
    ['ALTER TABLE "nodes" RENAME COLUMN "cordoned" TO "held";', 'rename'],
    ['ALTER TABLE "nodes" RENAME TO "machines";', 'rename'],
    ["ALTER TYPE state RENAME VALUE 'a' TO 'b';", 'rename'],
    ['ALTER TABLE "nodes" ALTER COLUMN "cordoned" TYPE INTEGER USING 0;', 'alter-type'],
    ['ALTER TABLE nodes ALTER cordoned SET DATA TYPE TEXT;', 'alter-type'],
    ['ALTER TABLE "nodes" ALTER COLUMN "name" SET NOT NULL;', 'set-not-null'],
    ['ALTER TABLE "nodes" ALTER COLUMN "name" DROP NOT NULL;', 'drop-not-null'],
    ['ALTER TABLE "nodes" ALTER COLUMN "cordoned" DROP DEFAULT;', 'drop-default'],
    ['ALTER TABLE "nodes" ADD COLUMN "ca_pin" TEXT NOT NULL;', 'add-required-column'],
    ['ALTER TABLE "nodes" ADD CONSTRAINT "name_check" CHECK ("name" <> \'\');', 'tighten'],
    ['CREATE UNIQUE INDEX "nodes_name_key" ON "nodes" ("name");', 'tighten'],
    ['DROP FUNCTION rate_limit_hit(text);', 'drop-object'],
    ['DROP VIEW IF EXISTS node_view;', 'drop-object'],
    ['TRUNCATE "rate_limits";', 'truncate'],
  ])('refuses %s (%s)', (sql, rule) => {
    expect(rulesOf(sql)).toEqual([rule]);
  });

  it('admits expansions', () => {
    const sql = `
      -- A comment that says DROP TABLE nodes; is not a statement.
      CREATE TABLE "pki_rotations" ("id" TEXT NOT NULL, "state" TEXT NOT NULL, PRIMARY KEY ("id"));
      ALTER TABLE "pki_rotations" ADD CONSTRAINT "state_check" CHECK ("state" IN ('a', 'b'));
      CREATE UNIQUE INDEX "pki_rotations_state_key" ON "pki_rotations" ("state");
      ALTER TABLE "node_certs" ADD COLUMN "ca_pin" TEXT;
      ALTER TABLE "nodes" ADD COLUMN "trust_version" INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE "nodes" ADD COLUMN "origin" TEXT NOT NULL DEFAULT 'local', ADD CONSTRAINT "origin_check" CHECK (origin IN ('local', 'sso'));
      CREATE UNIQUE INDEX nodes_subject_key ON nodes (lower(origin));
      CREATE INDEX "nodes_trust_version_idx" ON "nodes" ("trust_version");
      DROP INDEX "join_requests_site_id_state_idx";
      ALTER TABLE "memberships" DROP CONSTRAINT "memberships_role_check";
      ALTER TABLE "nodes" ALTER COLUMN "cordoned" SET DEFAULT true;
      UPDATE "nodes" SET "trust_version" = 1 WHERE "trust_version" = 0;
      DROP FUNCTION IF EXISTS bump(text);
      CREATE OR REPLACE FUNCTION bump(p TEXT) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        DROP TABLE IF EXISTS scratch; ALTER TABLE nodes DROP COLUMN x;
      END $$;
      INSERT INTO settings (key, value) VALUES ('a; DROP TABLE nodes', 'it''s');
    `;
    expect(expandOnlyViolations(sql)).toEqual([]);
  });

  it('judges a constraint that names an existing column with new ones as tightening', () => {
    const sql = `ALTER TABLE nodes ADD COLUMN origin TEXT; CREATE UNIQUE INDEX k ON nodes (origin, name);`;
    expect(rulesOf(sql)).toEqual(['tighten']);
  });
});
