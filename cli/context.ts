import type { Command } from 'commander';
import { ApiClient } from './client';

/** The API client for a command, from the program's global --server and --api-key. */
export function clientFor(command: Command): ApiClient {
  const opts = command.optsWithGlobals() as { server?: string; apiKey?: string };
  return new ApiClient({ server: opts.server, apiKey: opts.apiKey });
}
