import type { Command } from 'commander';
import type { Answer, GetProcedure, PostProcedure } from '../api';
import { enc } from '../client';
import { clientFor } from '../context';
import { printJson } from '../output';

/**
 * Adds `get <id>` and `archive <id>` to a resource group (sites, pools): both address
 * `/v1/tenants/{tenant}/{collection}/{id}`, archive with a POST to its `/archive`.
 */
export function addGetAndArchive<G extends GetProcedure, A extends PostProcedure>(
  group: Command,
  options: {
    noun: string;
    collection: string;
    /** The procedures of `get` and `archive`, whose answers `print` shows. */
    procedures: { get: G; archive: A };
    archiveNote?: string;
    print: (record: Answer<G> | Answer<A>) => void;
  },
) {
  for (const [name, description, suffix] of [
    ['get', `Show a ${options.noun}`, ''],
    ['archive', `Archive a ${options.noun}${options.archiveNote ?? ''}`, '/archive'],
  ] as const) {
    group
      .command(`${name} <${options.noun}Id>`)
      .description(description)
      .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
      .option('--json', 'print JSON')
      .action(async (id: string, opts: { tenant?: string; json?: boolean }, cmd: Command) => {
        const client = clientFor(cmd);
        const path = `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/${options.collection}/${enc(id)}${suffix}`;
        const { procedures } = options;
        const record = suffix ? await client.post(procedures.archive, path) : await client.get(procedures.get, path);
        if (opts.json) printJson(record);
        else options.print(record);
      });
  }
}
