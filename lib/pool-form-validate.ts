import { createPoolInput } from '@/protocol/api/pool-schemas';
import { formFieldOf, poolFieldMessage, toCreatePoolInput, type PoolFormField, type PoolFormValues } from './pool-form';

export type PoolFieldErrors = Partial<Record<PoolFormField, string>>;

/**
 * Every problem of the create-pool form at once, checked with the server's own input schema before the
 * call (the server stops at its first issue). The first message per field is kept, said as the server
 * would say it next to that field.
 */
export function validatePoolForm(tenantId: string, values: PoolFormValues): PoolFieldErrors {
  const result = createPoolInput.safeParse(toCreatePoolInput(tenantId, values));
  if (result.success) return {};
  const errors: PoolFieldErrors = {};
  for (const issue of result.error.issues) {
    const field = issue.path.join('.');
    const formField = formFieldOf(field);
    if (!formField || errors[formField]) continue;
    errors[formField] = poolFieldMessage(
      { message: `${field}: ${issue.message}`, field, domainCode: 'INVALID_ARGUMENT', httpStatus: 400 },
      values,
    );
  }
  return errors;
}
