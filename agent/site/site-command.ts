import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readLinuxClaims } from '../claims-linux';
import { joinWithToken } from '../join';
import { runSessionLoop } from '../session/loop';
import { TrustStore } from '../trust/store';
import { bcdVersion } from '../bcd/version';
import { parseConfigToml } from '../bcd/config-toml';
import { joinSetup, UsageError, writeBootstrapConfig, type CommandIo } from '../bcd/join-setup';
import { renewalOptionsFromConfig } from '../bcd/node-options';
import { bcdCommandOptions } from '../bcd/command-options';
import { readStoredIdentity } from '../bcd/read-identity';
import { readTokenFile, removeTokenFile } from '../bcd/token-input';
import { BootLeases, bootHandler, listenOn } from './boot-listener';
import { SiteClient } from './site-client';
import { listenPlan } from './listen-plan';

interface SiteArgs {
  server?: string;
  servingCaPin?: string;
  joinSigningPin?: string;
  joinEncryptionPin?: string;
  tokenFile?: string;
  /** Where the site agent keeps config.toml, join-encryption.jwk and its identity (/var/lib/bcd-site). */
  siteDir?: string;
  /** `POST /v1/leases` (127.0.0.1:8470 unless given). */
  leaseListen?: string;
  /** `GET /v1/boot/<mac>/token` for the ramdisks (the lease listener's address unless given). */
  bootListen?: string;
}

/** `bcd site`'s flags (agent/bcd/main.ts registers the subcommand). */
export function runSiteCommand(argv: string[], io: CommandIo): Promise<number> {
  const text = { type: 'string' } as const;
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      server: text,
      'serving-ca-pin': text,
      'join-signing-pin': text,
      'join-encryption-pin': text,
      'token-file': text,
      'site-dir': text,
      'lease-listen': text,
      'boot-listen': text,
    },
  });
  return runSite(
    {
      server: values.server,
      servingCaPin: values['serving-ca-pin'],
      joinSigningPin: values['join-signing-pin'],
      joinEncryptionPin: values['join-encryption-pin'],
      tokenFile: values['token-file'],
      siteDir: values['site-dir'],
      leaseListen: values['lease-listen'],
      bootListen: values['boot-listen'],
    },
    io,
  );
}

/** The site agent's state directory: its own, so a machine that runs `bcd node` keeps that identity apart. */
function siteDirOf(args: SiteArgs, env: NodeJS.ProcessEnv = process.env): string {
  return args.siteDir ?? path.join(env.BCD_ROOT ? path.resolve(env.BCD_ROOT) : '/', 'var/lib/bcd-site');
}

/**
 * `bcd site`: joins the site with a `site` token when the site directory holds no identity yet (exactly as
 * `bcd join` does, with the token's role `site`, into `<site-dir>/identity`), then holds the session with the
 * gateway and renews on it (the session loop of `bcd node`), and serves the site's boot step: for each lease it
 * is told of, a discovery token bound to the lease's MAC, minted and redeemed over its own mutual TLS and handed
 * once to that machine's ramdisk. Runs until SIGTERM; returns the session loop's exit code.
 */
async function runSite(args: SiteArgs, io: CommandIo): Promise<number> {
  // Checked before anything is joined or bound.
  const { lease: leaseAddress, boot: bootAddress } = listenPlan(args.leaseListen, args.bootListen);
  const siteDir = siteDirOf(args, io.env);
  const configPath = path.join(siteDir, 'config.toml');
  const identityDir = path.join(siteDir, 'identity');
  if (!(await readStoredIdentity(identityDir))) {
    if (!args.tokenFile) throw new UsageError(`${identityDir} holds no identity: join the site first with --token-file F (a site token)`);
    const joined = await joinSite(args, io, configPath, identityDir);
    if (joined !== 0) return joined;
  } else if (args.tokenFile) {
    io.out(`already joined (${identityDir}); ${args.tokenFile} was not used`);
  }
  const config = parseConfigToml(await readFile(configPath, 'utf8'), configPath);
  const controller = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => controller.abort());
  const held = await TrustStore.open({
    dir: identityDir,
    install: {
      servingCaPin: config.servingCaSpkiPin,
      joinSigningKeyPin: config.joinSigningKeyPin,
      joinEncryptionKeyPin: config.joinEncryptionKeyPin,
    },
    log: io.out,
  });
  const gateway = { ...renewalOptionsFromConfig(config, identityDir), trust: held };
  const leases = new BootLeases(new SiteClient(gateway, identityDir), io.out);
  const servers = [];
  if (bootAddress === leaseAddress) {
    servers.push(await listenOn(leaseAddress, bootHandler(leases, { leases: true, boot: true })));
  } else {
    servers.push(await listenOn(leaseAddress, bootHandler(leases, { leases: true, boot: false })));
    servers.push(await listenOn(bootAddress, bootHandler(leases, { leases: false, boot: true })));
  }
  io.out(`site: leases on ${leaseAddress} (port ${servers[0]!.port}), ramdisk tokens on ${bootAddress} (port ${servers.at(-1)!.port})`);
  try {
    return await runSessionLoop({
      ...gateway,
      joinAgain: 'join the site again: remove the site directory, then bcd site --token-file F',
      signal: controller.signal,
      log: io.out,
      joinSigningKeyPin: config.joinSigningKeyPin,
      agentVersion: bcdVersion(),
      writeState: true,
      // It runs the commands of protocol 1 as bcd node does (its doctor reads the site's configuration).
      commands: bcdCommandOptions(configPath, io),
    });
  } finally {
    await Promise.all(servers.map(({ server }) => new Promise((resolve) => server.close(resolve))));
  }
}

/** The site join: `bcd join`'s pinned setup and token handling, with the role `site` and the site directory's paths. */
async function joinSite(args: SiteArgs, io: CommandIo, configPath: string, identityDir: string): Promise<number> {
  const setup = await joinSetup({ ...args, config: configPath, identityDir }, io);
  if (!setup) return 0;
  const token = await readTokenFile(args.tokenFile!);
  const answer = await joinWithToken({
    serverUrl: setup.serverUrl,
    token,
    claims: await readLinuxClaims((io.env ?? process.env).BCD_ROOT || '/'),
    pins: { joinSigningKeyPin: setup.pins.joinSigningKeyPin, joinEncryptionKeyPin: setup.pins.joinEncryptionKeyPin },
    identityDir,
    jwkPath: setup.jwkPath,
    refuseMismatchedKeyFile: true,
    fetch: setup.doFetch,
    trust: setup.trust,
    role: 'site',
  });
  await removeTokenFile(args.tokenFile!, io.err);
  if (answer.status === 'pending') {
    io.err(`join request ${answer.requestId} awaits approval; run bcd site again`);
    return 3;
  }
  await writeBootstrapConfig(setup, answer.siteId);
  io.out(`joined: site agent ${answer.nodeId} in site ${answer.siteId} (${identityDir})`);
  return 0;
}
