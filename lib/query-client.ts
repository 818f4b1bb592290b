import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { isClientError, toApiError } from './api-errors';

/**
 * One QueryClient per browser tab. A 4xx answer (validation, access, not found) will not change on a
 * retry, so only network and server failures are retried. `onUnauthenticated` runs when any call answers
 * 401, i.e. the session ended while the console was open.
 */
export function makeQueryClient(options: { onUnauthenticated?: () => void } = {}) {
  const onError = (error: unknown) => {
    if (toApiError(error).httpStatus === 401) options.onUnauthenticated?.();
  };
  return new QueryClient({
    queryCache: new QueryCache({ onError }),
    mutationCache: new MutationCache({ onError }),
    defaultOptions: {
      queries: {
        staleTime: 10_000,
        refetchOnWindowFocus: false,
        retry: (failureCount, error) => !isClientError(error) && failureCount < 2,
      },
      mutations: { retry: false },
    },
  });
}
