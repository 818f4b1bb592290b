import { z } from 'zod';
import type pg from 'pg';
import { newId } from '../ids';
import { acceptanceCheckSpec, evaluateChecks, measurementSchema, type CheckResult } from '../../protocol/acceptance-checks';

// Plain SQL in one transaction on the session hub's pg connection, which the caller (server/sessions/) holds
// (docs/decisions/typed-sql.md); checked by test/sql-check.test.ts.

/** What bcd reports on its session's connection: the run it was asked, and what it measured. */
export const acceptanceReport = z.object({
  runId: z.string().regex(/^acc_[a-z0-9]{1,40}$/),
  measurements: z.array(measurementSchema).max(32),
});
type AcceptanceReport = z.infer<typeof acceptanceReport>;

type ReportOutcome = { state: 'passed' | 'failed'; results: CheckResult[] } | 'unknown-run';

/**
 * Finishes the node's pending run with bcd's measurements, under the node's row lock: decides each check,
 * records the results, publishes `node.acceptance.passed` or `node.acceptance.failed` (with the failing checks),
 * and on a pass adopts a node that is still `adopting` (`node.adopted`, by `acceptance`, with its audit row).
 * A run that is not the node's pending run of its current generation is `unknown-run` and changes nothing.
 */
export async function recordAcceptanceReport(pool: pg.Pool, nodeId: string, report: AcceptanceReport): Promise<ReportOutcome> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    try {
      const found = await client.query<{
        checks: unknown;
        claims: unknown;
        state: string;
        tenant_id: string;
        pool_id: string | null;
        identity_generation: number;
      }>(
        `SELECT r.checks, n.claims, n.state, n.tenant_id, n.pool_id, n.identity_generation
           FROM nodes n JOIN node_acceptance_runs r ON r.node_id = n.id
          WHERE n.id = $1 AND r.id = $2 AND r.state = 'pending' AND r.identity_generation = n.identity_generation
          FOR UPDATE OF n, r`,
        [nodeId, report.runId],
      );
      const row = found.rows[0];
      if (!row) {
        await client.query('ROLLBACK');
        return 'unknown-run';
      }
      const specs = z.array(acceptanceCheckSpec).parse(row.checks);
      const results = evaluateChecks(specs, report.measurements, (row.claims ?? {}) as Record<string, never>);
      const passed = results.every((r) => r.passed);
      const state = passed ? 'passed' : 'failed';
      await client.query(`UPDATE node_acceptance_runs SET state = $2, results = $3::jsonb, finished_at = compute_now() WHERE id = $1`, [
        report.runId,
        state,
        JSON.stringify(results),
      ]);
      const base = { nodeId, poolId: row.pool_id, runId: report.runId, identityGeneration: row.identity_generation };
      const data = passed ? { ...base, results } : { ...base, results, failed: results.filter((r) => !r.passed).map((r) => r.check) };
      await client.query(`INSERT INTO events (tenant_id, type, data) VALUES ($1, $2, $3::jsonb)`, [
        row.tenant_id,
        `node.acceptance.${state}`,
        JSON.stringify(data),
      ]);
      if (passed && row.state === 'adopting') {
        await client.query(`UPDATE nodes SET state = 'adopted', updated_at = compute_now() WHERE id = $1`, [nodeId]);
        const adopted = { nodeId, by: 'acceptance', runId: report.runId };
        await client.query(`INSERT INTO events (tenant_id, type, data) VALUES ($1, 'node.adopted', $2::jsonb)`, [
          row.tenant_id,
          JSON.stringify(adopted),
        ]);
        await client.query(
          `INSERT INTO audit_log (tenant_id, actor, action, resource, data) VALUES ($1, 'acceptance', 'node.adopted', $2, $3::jsonb)`,
          [row.tenant_id, `compute-node/${nodeId}`, JSON.stringify(adopted)],
        );
      }
      await client.query('COMMIT');
      return { state, results };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  } finally {
    client.release();
  }
}

export const newRunId = () => newId('acc');
