import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { toApiError, UNREACHABLE_MESSAGE } from './api-errors';

describe('toApiError', () => {
  it("says the server could not be reached when a proxy's HTML page came back instead of JSON", () => {
    // What the tRPC client throws when JSON.parse meets `<html>…` from a proxy's 502 page.
    const parse = (() => {
      try {
        JSON.parse('<html><body>502 Bad Gateway</body></html>');
      } catch (error) {
        return error as Error;
      }
      throw new Error('unreachable');
    })();
    const error = TRPCClientError.from(parse);
    const api = toApiError(error);
    expect(api.isUnreachable).toBe(true);
    expect(api.message).toBe(UNREACHABLE_MESSAGE);
    expect(api.message).not.toMatch(/Unexpected token/);
  });

  it('says the same when the fetch itself failed', () => {
    const api = toApiError(TRPCClientError.from(new TypeError('Failed to fetch')));
    expect(api).toMatchObject({ isUnreachable: true, message: UNREACHABLE_MESSAGE, httpStatus: null });
  });

  it("keeps the API's own message, code and field when the API answered", () => {
    const api = toApiError({
      message: 'maxUses: must be at most 10000',
      data: { domainCode: 'INVALID_ARGUMENT', field: 'maxUses', httpStatus: 400 },
    });
    expect(api).toEqual({
      message: 'maxUses: must be at most 10000',
      domainCode: 'INVALID_ARGUMENT',
      field: 'maxUses',
      httpStatus: 400,
      isUnreachable: false,
    });
  });

  it('does not take an API message that mentions JSON for a transport failure', () => {
    const api = toApiError({
      message: 'claims: not valid JSON',
      data: { domainCode: 'INVALID_ARGUMENT', field: 'claims', httpStatus: 400 },
    });
    expect(api.isUnreachable).toBe(false);
    expect(api.message).toBe('claims: not valid JSON');
  });
});
