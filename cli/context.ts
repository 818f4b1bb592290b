import type { Command } from 'commander';
import { ApiClient, enc } from './client';

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

/** {@link clientFor}, with the REST path of the tenant `--tenant` names (the API key's own by default): `/v1/tenants/{id}`. */
export async function tenantClientFor(command: Command, tenant: string | undefined): Promise<{ client: ApiClient; tenantPath: string }> {
  const client = clientFor(command);
  return { client, tenantPath: `/v1/tenants/${enc(await client.tenantId(tenant))}` };
}
