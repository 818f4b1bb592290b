import { readLinuxClaims } from '../claims-linux';
import { joinWithToken, ProvisionedNodeMismatchError } from '../join';
import { JOIN_ATTESTORS, joinSetup, UsageError, writeBootstrapConfig, type CommandIo, type JoinArgs, type JoinSetup } from './join-setup';
import { readTokenFile, readTokenFromStdin, removeTokenFile } from './token-input';
import { runTpmJoinCommand } from './tpm-join-command';
import { describeTpmAddress, makeNodeKeyInTpm, nodeKeyTpmOf, type TpmJoinKeys } from '../tpm/node-key';
import { helperHandOver } from '../helper/join-hand-over';

export type { CommandIo } from './join-setup';

const NODE_ID = /^node_[0-9a-z]{1,40}$/;

/**
 * `bcd join`: the pinned configuration (config.toml, or with none, `--server` and the three pins checked
 * against the well-known document), then the token (standard input, or `--token-file`), then the join, which
 * writes the identity only after the answer verified. A machine that already holds an identity answers
 * `already joined` before the token is read, so the token is not spent. With `--attestor tpm` there is no
 * token: the TPM attests the machine (agent/bcd/tpm-join-command.ts). With `--node-id` the token is a deploy's
 * `provisioned` one: the join reclaims that node, and an answer for any other node is refused before anything
 * is stored. Returns the exit code.
 */
export async function runJoin(args: JoinArgs, io: CommandIo): Promise<number> {
  const attestor = args.attestor ?? 'join-token';
  if (!(JOIN_ATTESTORS as readonly string[]).includes(attestor))
    throw new UsageError(`--attestor is one of ${JOIN_ATTESTORS.join(', ')}, not ${attestor}`);
  if (attestor === 'tpm' && args.tokenFile) throw new UsageError('a tpm join takes no token: drop --token-file');
  if (attestor !== 'tpm' && (args.site || args.pool || args.noWait))
    throw new UsageError('--site, --pool and --no-wait are for --attestor tpm; a token names its pool');
  if (args.nodeId !== undefined && (attestor === 'tpm' || !NODE_ID.test(args.nodeId)))
    throw new UsageError('--node-id takes a node id (node_…) and a provisioned token, not --attestor tpm');
  const setup = await joinSetup(args, io);
  if (!setup) return 0;
  // Under [helper] a root join checks the user exists before spending anything, and hands it the identity.
  const handOver = await helperHandOver(setup, io);
  const code = await (attestor === 'tpm' ? runTpmJoinCommand(args, io, setup) : runTokenJoin(args, io, setup));
  if (code === 0) await handOver?.();
  return code;
}

async function runTokenJoin(args: JoinArgs, io: CommandIo, setup: JoinSetup): Promise<number> {
  const { paths, jwkPath, serverUrl, doFetch, pins } = setup;
  const token = args.tokenFile ? await readTokenFile(args.tokenFile) : await readTokenFromStdin(io.stdin);
  // The node key: in the TPM (--tpm, BCD_TPM, else /dev/tpmrm0 when present), else a software key.
  let tpmKey: TpmJoinKeys | null = null;
  const answer = await joinWithToken({
    serverUrl,
    token,
    // BCD_ROOT (tests only) is also where the machine's sysfs is read from, so a test machine has identifiers.
    claims: await readLinuxClaims((io.env ?? process.env).BCD_ROOT || '/'),
    pins: { joinSigningKeyPin: pins.joinSigningKeyPin, joinEncryptionKeyPin: pins.joinEncryptionKeyPin },
    identityDir: paths.identityDir,
    jwkPath,
    // A key file that does not match the pin fails the join (it is the install's own file), never falls back.
    refuseMismatchedKeyFile: true,
    reset: args.reset,
    fetch: doFetch,
    trust: setup.trust,
    nodeKey: async () => (tpmKey = await makeNodeKeyInTpm(nodeKeyTpmOf(args.tpm, io.env), (line) => io.err(`bcd: ${line}`))),
    // A deploy's token: the join asks for role `provisioned` and keeps only an answer for that node.
    ...(args.nodeId !== undefined ? { joinRole: 'provisioned', expectedNodeId: args.nodeId } : {}),
  }).catch(async (error: unknown) => {
    // A deploy's token that answered for another node is of no use on this machine (a joined answer spent it;
    // it names that node either way): deleted as after any join (joining.md: --token-file is deleted after the
    // join), never left on disk for a later run.
    if (error instanceof ProvisionedNodeMismatchError && args.tokenFile) await removeTokenFile(args.tokenFile, io.err);
    throw error;
  });
  if (args.tokenFile) await removeTokenFile(args.tokenFile, io.err);
  if (answer.status === 'pending') {
    io.out(`join request ${answer.requestId} awaits approval; run bcd join again in ${answer.retryAfterSeconds}s`);
    return 3;
  }
  await writeBootstrapConfig(setup, answer.siteId);
  io.out(`joined: node ${answer.nodeId} in site ${answer.siteId} (${paths.identityDir})${joinedKeyNote(tpmKey, args.tpm, io.env)}`);
  return 0;
}

/** Where the joined key lives, as the join's last line says it: nothing proves a token join's key to the control plane. */
function joinedKeyNote(tpmKey: TpmJoinKeys | null, flag: string | undefined, env: NodeJS.ProcessEnv | undefined): string {
  if (!tpmKey) return '; its key is in software (node.key)';
  const where = describeTpmAddress(nodeKeyTpmOf(flag, env).address);
  return `; its key is held by the TPM (${where}), unattested: nothing proves that to the control plane`;
}
