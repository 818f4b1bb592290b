import { z } from 'zod';

/** The answers of `expectedMachines.*`. */
export const importExpectedAnswer = z
  .object({
    importId: z.string().nullable(),
    accepted: z.number().int(),
    rejected: z.array(z.object({ row: z.number().int(), reason: z.string() }).strict()),
    /** The first accepted rows, as they will be stored. */
    sample: z.array(
      z
        .object({
          row: z.number().int(),
          serial: z.string().nullable(),
          productUuid: z.string().nullable(),
          mac: z.string().nullable(),
          gpuUuid: z.string().nullable(),
          poolId: z.string().nullable(),
          hostname: z.string().nullable(),
          expiresAt: z.string().nullable(),
          labels: z.record(z.string(), z.string()),
        })
        .strict(),
    ),
  })
  .strict();
export const expectedList = z
  .object({
    total: z.number().int(),
    items: z.array(
      z
        .object({
          id: z.string(),
          importId: z.string(),
          serial: z.string().nullable(),
          productUuid: z.string().nullable(),
          mac: z.string().nullable(),
          gpuUuid: z.string().nullable(),
          poolId: z.string(),
          hostname: z.string().nullable(),
          expiresAt: z.string().nullable(),
          arrivedAt: z.string().nullable(),
          requestId: z.string().nullable(),
          labels: z.record(z.string(), z.string()),
        })
        .strict(),
    ),
  })
  .strict();
export const deleteExpectedAnswer = z.object({ deleted: z.number().int() }).strict();
export const unmatchedAnswer = z
  .object({
    items: z.array(
      z
        .object({
          requestId: z.string(),
          state: z.string(),
          mac: z.string().nullable(),
          hostname: z.string().nullable(),
          serial: z.string().nullable(),
          productUuid: z.string().nullable(),
          decidedBy: z.string().nullable(),
          createdAt: z.string(),
        })
        .strict(),
    ),
  })
  .strict();
