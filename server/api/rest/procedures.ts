import type { z } from 'zod';
import { appRouter } from '../root';

type AnyProcedure = { _def: { inputs: unknown[]; type: 'query' | 'mutation' } };

/** The zod input schema of a procedure by dotted path, for query coercion and the OpenAPI document. */
export function procedureInput(path: string): z.ZodType | undefined {
  const procedure = (appRouter._def.procedures as unknown as Record<string, AnyProcedure>)[path];
  return procedure?._def.inputs[0] as z.ZodType | undefined;
}

export function procedureOutput(path: string): z.ZodType | undefined {
  const procedure = (appRouter._def.procedures as unknown as Record<string, { _def: { output?: unknown } }>)[path];
  return procedure?._def.output as z.ZodType | undefined;
}
