import { open } from 'node:fs/promises';
import { type Command, InvalidArgumentError } from 'commander';
import { DomainError } from '../../protocol/errors';
import {
  IMPORTED_KEY_LIMITS,
  PKI_KEY_KIND_LABELS,
  PKI_KEY_KIND_NAMES,
  type KeyRotationStatusRecord,
  type PkiKeyKindName,
  type RotationStatusRecord,
} from '../../protocol/api/pki-rotation-schemas';
import { enc } from '../client';
import { clientFor } from '../context';
import { printJson } from '../output';

const keyKind = (value: string): PkiKeyKindName => {
  if ((PKI_KEY_KIND_NAMES as readonly string[]).includes(value)) return value as PkiKeyKindName;
  throw new InvalidArgumentError(`use one of ${PKI_KEY_KIND_NAMES.join(', ')}`);
};

const usage = (message: string, field: string) => new DomainError('INVALID_ARGUMENT', message, { field });

/** A PEM file of at most `max` characters, read without trusting its size first (no unbounded read). */
async function readPemFile(file: string, max: number, option: string): Promise<string> {
  const handle = await open(file, 'r').catch((error: NodeJS.ErrnoException) => {
    throw usage(`${option} ${file}: cannot read it (${error.code ?? error.message})`, option.slice(2));
  });
  try {
    const buffer = Buffer.alloc(max + 1);
    const { bytesRead } = await handle.read(buffer, 0, max + 1, 0);
    if (bytesRead > max) throw usage(`${option} ${file}: larger than ${max} bytes; is it a single PEM?`, option.slice(2));
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

interface RotateOptions {
  prepare?: boolean;
  activate?: boolean;
  retire?: boolean;
  force?: boolean;
  reason?: string;
  from?: string;
  certificate?: string;
  json?: boolean;
}

/** The one step the flags name, refusing combinations that would be ambiguous or ignored. */
function stepOf(opts: RotateOptions): 'prepare' | 'activate' | 'retire' {
  const steps = (['prepare', 'activate', 'retire'] as const).filter((step) => opts[step]);
  if (steps.length !== 1)
    throw usage(`use exactly one of --prepare, --activate, --retire (got ${steps.map((s) => `--${s}`).join(' ') || 'none'})`, 'step');
  const step = steps[0]!;
  if ((opts.from || opts.certificate) && step !== 'prepare') throw usage('--from and --certificate go with --prepare only', 'from');
  if (opts.certificate && !opts.from) throw usage('--certificate goes with --from <key.pem>', 'certificate');
  if ((opts.force || opts.reason !== undefined) && step !== 'retire') throw usage('--force and --reason go with --retire only', 'force');
  if (opts.force && !opts.reason?.trim()) throw usage('--force needs --reason <text> (it is audited)', 'reason');
  if (opts.reason !== undefined && !opts.force) throw usage('--reason is recorded only with --force', 'force');
  return step;
}

const PHASE_WORDS = { idle: 'idle', prepared: 'prepared', active: 'active' } as const;

/** How one key reads to an operator: phase and since, pins, the next step and how many nodes are ready for it. */
export function describeKey(key: KeyRotationStatusRecord): string {
  const lines = [`${key.kind} (${PKI_KEY_KIND_LABELS[key.kind]}): ${PHASE_WORDS[key.phase]} since ${key.since}`];
  lines.push(`  in use:     ${key.currentPin}`);
  if (key.otherPin) lines.push(`  ${key.phase === 'prepared' ? 'next:      ' : 'previous:  '} ${key.otherPin}`);
  const { trustVersion, nodesReady, nodesTotal } = key.readiness;
  lines.push(`  next step:  better-compute pki rotate ${key.kind} --${key.nextStep}`);
  lines.push(`  readiness:  ${nodesReady} of ${nodesTotal} nodes hold trust version ${trustVersion} or later`);
  if (key.liveCertificatesOfPrevious !== undefined)
    lines.push(
      `  live certificates of the previous CA: ${key.liveCertificatesOfPrevious}` +
        (key.liveCertificatesOfPrevious > 0 ? ' (retire is refused until they expire or renew; --force --reason overrides)' : ''),
    );
  if (key.gatewaysOnPrevious !== undefined)
    lines.push(
      `  gateways still on the previous CA: ${key.gatewaysOnPrevious}` +
        (key.gatewaysOnPrevious > 0
          ? ' (seen in the last minute; retire is refused until they serve the new CA; --force --reason overrides)'
          : ''),
    );
  if (key.lastRetiredAt) lines.push(`  last rotation finished: ${key.lastRetiredAt}`);
  return lines.join('\n');
}

function printStatus(status: RotationStatusRecord) {
  process.stdout.write(`Trust version ${status.trustVersion}\n\n${status.keys.map(describeKey).join('\n\n')}\n`);
}

const PROCEDURES = { prepare: 'pki.rotation.prepare', activate: 'pki.rotation.activate', retire: 'pki.rotation.retire' } as const;
const DONE = { prepare: 'Prepared', activate: 'Activated', retire: 'Retired the previous' } as const;

/** `pki rotate <key> --prepare|--activate|--retire` and `pki rotation status`: through the API, root admins only. */
export function registerPkiRotationCommands(pki: Command) {
  pki
    .command('rotate')
    .description('Rotate one of the keys machines trust, one step at a time (root admins; through the API)')
    .argument('<key>', `the key: ${PKI_KEY_KIND_NAMES.join(', ')}`, keyKind)
    .option('--prepare', 'make (or import with --from) the next key: trusted everywhere, used nowhere')
    .option('--activate', 'put the prepared key in use; the previous stays trusted')
    .option('--retire', 'stop trusting the previous key')
    .option('--force', 'with --retire: retire although the node CA has valid certificates, or gateways still serve the serving CA')
    .option('--reason <text>', 'with --force: why (recorded in the audit log)')
    .option('--from <key.pem>', 'with --prepare: import this PKCS#8 private key (a CA kept offline)')
    .option('--certificate <cert.pem>', "with --from: the key's certificate (every key but join-encryption)")
    .option('--json', 'print the answer as JSON')
    .action(async (kind: PkiKeyKindName, opts: RotateOptions, cmd: Command) => {
      const step = stepOf(opts);
      const body: Record<string, unknown> = {};
      if (opts.from) {
        body.from = {
          privateKeyPem: await readPemFile(opts.from, IMPORTED_KEY_LIMITS.privateKeyPemChars, '--from'),
          certificatePem: opts.certificate
            ? await readPemFile(opts.certificate, IMPORTED_KEY_LIMITS.certificatePemChars, '--certificate')
            : undefined,
        };
      }
      if (opts.force) Object.assign(body, { force: true, reason: opts.reason });
      const client = clientFor(cmd);
      const result = await client.post(PROCEDURES[step], `/v1/pki/rotation/${enc(kind)}/${step}`, body);
      if (opts.json) return printJson(result);
      process.stdout.write(
        `${DONE[step]} ${PKI_KEY_KIND_LABELS[kind]}; trust version ${result.trustVersion}.\n\n${describeKey(result.status)}\n`,
      );
    });
  pki
    .command('rotation')
    .description('Trust rotation (root admins; through the API)')
    .command('status')
    .description("Each key's phase, since when, pins, next step and how many nodes are ready for it")
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const status = await clientFor(cmd).get('pki.rotation.status', '/v1/pki/rotation');
      if (opts.json) return printJson(status);
      printStatus(status);
    });
}
