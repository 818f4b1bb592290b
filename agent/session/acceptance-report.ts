import { measureChecks, type MachineProbe } from '../acceptance/measure';
import type { AgentSession } from './session-client';

/**
 * An `acceptance` event: measures what the control plane asked and reports it on the same connection
 * (`{basePath}/v1/session/acceptance`). A failure is logged; the run stays pending and the next session is
 * asked again.
 */
export async function reportAcceptance(
  on: AgentSession,
  ask: { runId?: unknown; checks?: unknown },
  options: { basePath: string; probe?: MachineProbe; log: (line: string) => void },
): Promise<void> {
  const { log } = options;
  if (typeof ask?.runId !== 'string' || !Array.isArray(ask.checks)) return;
  log(`agent: running acceptance checks (${ask.checks.map((c) => (c as { check?: string }).check).join(', ')})`);
  try {
    const measurements = await measureChecks(ask.checks, options.probe);
    const reply = await on.post(`${options.basePath}/v1/session/acceptance`, JSON.stringify({ runId: ask.runId, measurements }));
    const outcome =
      reply.status === 200
        ? (JSON.parse(reply.body.toString('utf8')) as {
            state: string;
            results: Array<{ check: string; passed: boolean; message: string }>;
          })
        : null;
    if (!outcome) log(`agent: the acceptance report was answered ${reply.status}`);
    else
      log(
        `agent: acceptance ${outcome.state}: ${outcome.results.map((r) => `${r.check} ${r.passed ? 'ok' : 'FAILED'} (${r.message})`).join('; ')}`,
      );
  } catch (error) {
    // The run stays pending: the next session is asked again.
    log(`agent: could not report the acceptance checks: ${(error as Error).message}`);
  }
}
