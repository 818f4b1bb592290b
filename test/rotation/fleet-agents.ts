import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { joinWithToken } from '../../agent/join';
import { runSessionLoop } from '../../agent/session/loop';
import { TrustStore } from '../../agent/trust/store';
import { spkiPin } from '../../protocol/pins';
import { principalOf } from '../../server/authz/principal';
import { generateInstallScript } from '../../server/daemon/generate';
import { newMachineRoot, run, type BcdBuild } from '../bcd-build';
import { machineClaims } from '../join-harness';
import { wellKnownOf, type RotationDeployment } from './deployment';

const running = new Set<ChildProcess>();
// A test file that fails or times out must not leave bcd processes running after its worker exits.
process.once('exit', () => running.forEach((child) => child.kill('SIGKILL')));

/** What a machine was installed with: the pins of the well-known document at the time. */
interface InstallPins {
  servingCaPin: string;
  joinSigningKeyPin: string;
  joinEncryptionKeyPin: string;
}

/** The pins an install made now would write (the well-known document of API `api`). */
export async function installPinsNow(d: RotationDeployment, api = 0): Promise<InstallPins> {
  const doc = await wellKnownOf(d.apis[api]!.url);
  return {
    servingCaPin: doc.gateway.servingCaPin,
    joinSigningKeyPin: doc.join.signingKeyPin,
    joinEncryptionKeyPin: doc.join.encryptionKeyPin,
  };
}

/** One machine of a test fleet: bcd installed under a prefix, or the CLI agent's session loop with a directory of its own. */
export interface FleetNode {
  kind: 'bcd' | 'agent';
  nodeId: string;
  /** Where identity.json and trust.json live. */
  identityDir: string;
  /** Everything the agent logged, a line each. */
  lines: string[];
  /** Whether the agent runs (its session loop or bcd node). */
  running(): boolean;
  /** Starts the agent's session loop (bcd node); a node starts running. */
  start(): void;
  /** Stops it (SIGTERM for bcd) and waits until it has; its exit code. */
  stop(): Promise<number | null>;
}

/**
 * The version of the trust set a node's agent holds: `trust.json` beside its identity, however the agent stores
 * the set (the body itself, or a signed envelope of it); null when it holds none.
 */
export async function heldTrustVersion(identityDir: string): Promise<number | null> {
  let stored: Record<string, unknown>;
  try {
    stored = JSON.parse(await readFile(path.join(identityDir, 'trust.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof stored.version === 'number') return stored.version;
  for (const inner of [stored.trust, stored.set, stored.body]) {
    if (inner && typeof inner === 'object' && typeof (inner as { version?: unknown }).version === 'number')
      return (inner as { version: number }).version;
    if (typeof inner === 'string') {
      const body = JSON.parse(Buffer.from(inner, 'base64url').toString('utf8')) as { version?: unknown };
      if (typeof body.version === 'number') return body.version;
    }
  }
  throw new Error(`${identityDir}/trust.json holds no version: ${JSON.stringify(stored).slice(0, 200)}`);
}

/** The pin of the CA that issued a node's current certificate (identity.json's chain). */
export async function issuingCaPin(identityDir: string): Promise<string> {
  const identity = JSON.parse(await readFile(path.join(identityDir, 'identity.json'), 'utf8')) as { certificateChain: string[] };
  return spkiPin(new X509Certificate(Buffer.from(identity.certificateChain[1]!, 'base64')).publicKey);
}

/**
 * Lines of a node's log that say a session or a renewal failed (a refused or failed Hello, a failed or refused
 * renewal, a session that could not move to a renewed certificate), after the node's first session opened.
 */
export function failuresAfterFirstSession(node: FleetNode): string[] {
  const first = node.lines.findIndex((line) => /session \S+ open through/.test(line));
  if (first < 0) return [];
  return node.lines
    .slice(first)
    .filter((line) => /could not open the session|renewal failed|refused|could not move the session/.test(line));
}

/** The trust set an agent holds, as `agent run` opens it: trust.json in the identity directory, grown from the install's pins. */
export const openTrust = (identityDir: string, pins: InstallPins, log: (line: string) => void) =>
  TrustStore.open({ dir: identityDir, install: pins, log });

/**
 * A machine running the CLI agent (`better-compute agent join`, then `agent run`'s session loop in this process,
 * identity and trust set on disk in a directory of its own), joined with `token` through API `api` with the pins
 * of `pins` and keeping its session through gateway `gateway`.
 */
export async function joinAgentNode(
  d: RotationDeployment,
  options: { token: string; pins: InstallPins; api?: number; gateway?: number },
): Promise<FleetNode> {
  const identityDir = mkdtempSync(path.join(tmpdir(), 'bc-rot-agent-'));
  const answer = await joinWithToken({
    serverUrl: d.apis[options.api ?? 0]!.url,
    token: options.token,
    claims: machineClaims(),
    pins: { joinSigningKeyPin: options.pins.joinSigningKeyPin, joinEncryptionKeyPin: options.pins.joinEncryptionKeyPin },
    identityDir,
  });
  if (answer.status !== 'joined') throw new Error(`the agent's join answered ${answer.status}`);
  const lines: string[] = [];
  let controller: AbortController | undefined;
  let loop: Promise<number> | undefined;
  let ended = false;
  const gatewayUrl = d.gateways[options.gateway ?? 0]!.url;
  return {
    kind: 'agent',
    nodeId: answer.nodeId,
    identityDir,
    lines,
    running: () => loop !== undefined && !ended,
    start() {
      if (loop) return;
      const signal = (controller = new AbortController()).signal;
      ended = false;
      const log = (line: string) => void lines.push(`${new Date().toISOString()} ${line}`);
      loop = openTrust(identityDir, options.pins, log)
        .then((trust) =>
          runSessionLoop({
            identityDir,
            trust,
            gatewayUrl,
            servingCaPin: options.pins.servingCaPin,
            joinSigningKeyPin: options.pins.joinSigningKeyPin,
            agentVersion: '0.1.0',
            startJitterMs: 0,
            signal,
            log,
          }),
        )
        .finally(() => (ended = true));
    },
    async stop() {
      if (!loop) return null;
      controller!.abort();
      const code = await loop;
      loop = undefined;
      return code;
    },
  };
}

/** The generated install script for gateway `gateway` and API `api`, in a file of its own (made with the pins of now). */
export async function installScriptFile(
  d: RotationDeployment,
  bcd: BcdBuild,
  options: { api?: number; gateway?: number } = {},
): Promise<string> {
  // generateInstallScript opens the PKI as the server does.
  process.env.BETTER_COMPUTE_SECRET = d.secret;
  const admin = principalOf('local', 'rotation-test', [[d.pool.ownerTenantId, 'admin']]);
  const { script } = await generateInstallScript(
    d.database.db,
    admin,
    {
      tenantId: d.pool.ownerTenantId,
      poolId: d.pool.id,
      gatewayUrl: d.gateways[options.gateway ?? 0]!.url,
      baseUrl: d.apis[options.api ?? 0]!.url,
      bcdVersion: bcd.version,
      sha256: { amd64: bcd.sha256 },
    },
    bcd.dir,
  );
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'bc-rot-script-')), 'install-bcd.sh');
  writeFileSync(file, script);
  return file;
}

/** bcd's environment on a machine whose `/` is `root`: no Node.js on PATH, its first session at once. */
export const bcdEnv = (root: string) =>
  ({ PATH: '/usr/bin:/bin', BCD_ROOT: root, BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0' }) as unknown as NodeJS.ProcessEnv;

/** Where bcd keeps identity.json and trust.json on a machine whose `/` is `root`. */
const bcdStateDir = (root: string) => path.join(root, 'var/lib/bcd');

/** A machine installed by `script` with `token` (sh install-bcd.sh under a BCD_ROOT prefix), not yet running bcd node. */
export async function installBcdNode(script: string, token: string): Promise<FleetNode & { root: string }> {
  const root = newMachineRoot();
  const installed = await run('sh', [script], { env: bcdEnv(root), input: `${token}\n` });
  if (installed.code !== 0) throw new Error(`the install script failed (${installed.code}): ${installed.stderr}`);
  return bcdNodeOf(root);
}

/** bcd on an installed machine: `bcd node` as bcd.service runs it, its stdout and stderr as `lines`. */
export async function bcdNodeOf(root: string): Promise<FleetNode & { root: string }> {
  const identityDir = bcdStateDir(root);
  const identity = JSON.parse(await readFile(path.join(identityDir, 'identity.json'), 'utf8')) as { nodeId: string };
  const lines: string[] = [];
  let child: ChildProcess | undefined;
  let exited: Promise<number | null> | undefined;
  return {
    kind: 'bcd',
    root,
    nodeId: identity.nodeId,
    identityDir,
    lines,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    start() {
      if (child) return;
      child = spawn(path.join(root, 'usr/local/bin/bcd'), ['node'], { env: bcdEnv(root), stdio: ['ignore', 'pipe', 'pipe'] });
      for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (line) => lines.push(line));
      running.add(child);
      const started = child;
      exited = new Promise((resolve) =>
        started.once('exit', (code) => {
          running.delete(started);
          resolve(code);
        }),
      );
    },
    async stop() {
      if (!child) return null;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited!;
      child = undefined;
      return code;
    },
  };
}
