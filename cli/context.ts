import type { Command } from 'commander';
import { ApiClient } from './client';

/** The command's words after the program's name (`join-tokens list`), as errors name it. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at?.parent; at = at.parent) names.unshift(at.name());
  return names.join(' ') || command.name();
}

/** The API client for a command, from the program's global --server and --api-key. */
export function clientFor(command: Command): ApiClient {
  const opts = command.optsWithGlobals() as { server?: string; apiKey?: string };
  return new ApiClient({ server: opts.server, apiKey: opts.apiKey, command: commandPath(command) });
}
