import type { z } from 'zod';
import { appRouter } from '../root';

type ProcedureDef = { inputs: unknown[]; output?: unknown };

const procedureDef = (path: string) =>
  (appRouter._def.procedures as unknown as Record<string, { _def: ProcedureDef } | undefined>)[path]?._def;

/** The zod input schema of a procedure by dotted path, for query coercion and the OpenAPI document. */
export function procedureInput(path: string): z.ZodType | undefined {
  return procedureDef(path)?.inputs[0] as z.ZodType | undefined;
}

export function procedureOutput(path: string): z.ZodType | undefined {
  return procedureDef(path)?.output as z.ZodType | undefined;
}
