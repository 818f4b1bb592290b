import { existsSync, readFileSync } from 'node:fs';
import { open, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { dataDirectory } from '../../server/boot/data-dir';
import { DomainError } from '../../protocol/errors';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { formatPins, installPins } from '../../server/pki/pins-summary';
import { MIN_SECRET_LENGTH, SECRET_HOW_TO } from '../../server/pki/bundle/secret-strength';
import { initPki, loadPki } from '../../server/pki/bundle/store';
import { withLocalDb } from '../local-db';
import { printJson } from '../output';
import { registerPkiRotationCommands } from './pki-rotation';

/** BETTER_COMPUTE_SECRET, or the development secret `npm start` keeps in the data directory. */
function pkiSecret(): string {
  const fromEnv = process.env.BETTER_COMPUTE_SECRET;
  if (fromEnv) return fromEnv;
  const file = path.join(dataDirectory(), 'secret');
  if (existsSync(file)) {
    process.stderr.write(`note: BETTER_COMPUTE_SECRET is not set; using the development secret in ${file}\n`);
    return readFileSync(file, 'utf8').trim();
  }
  throw new DomainError(
    'INVALID_ARGUMENT',
    `Set BETTER_COMPUTE_SECRET (at least ${MIN_SECRET_LENGTH} characters of random text; ${SECRET_HOW_TO}): the PKI bundle is encrypted under it`,
    { field: 'BETTER_COMPUTE_SECRET' },
  );
}

async function writeNewFile(file: string, content: string, mode: number) {
  const handle = await open(file, 'wx', mode).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'EEXIST' ? new DomainError('ALREADY_EXISTS', `${file} already exists; refusing to overwrite it`) : error;
  });
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

export function registerPkiCommands(program: Command) {
  const pki = program
    .command('pki')
    .description('The machine PKI: node CA, serving CA, JoinService keys (init/show/issue-gateway on the server machine)');
  registerPkiRotationCommands(pki);
  pki
    .command('init')
    .description('Create the PKI, sealed under BETTER_COMPUTE_SECRET; refuses to replace an existing one')
    .requiredOption('--trust-domain <domain>', 'the SPIFFE trust domain, e.g. compute.example.com')
    .option('--json', 'print the pins as JSON')
    .action(async (opts: { trustDomain: string; json?: boolean }) => {
      const secret = pkiSecret();
      const bundle = await withLocalDb((db) => initPki(db, { trustDomain: opts.trustDomain, secret }));
      const pins = installPins(bundle);
      if (opts.json) return printJson(pins);
      process.stdout.write(`Created the PKI for ${bundle.trustDomain}. The pins an install embeds:\n${formatPins(pins)}\n`);
    });
  pki
    .command('show')
    .description('Print the pins again')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const secret = pkiSecret();
      const pins = installPins(await withLocalDb((db) => loadPki(db, secret)));
      if (opts.json) return printJson(pins);
      process.stdout.write(formatPins(pins) + '\n');
    });
  pki
    .command('issue-gateway')
    .description("Issue the gateway's serving certificate from the serving CA")
    .requiredOption('--san <host...>', 'DNS name or IP address the gateway serves (repeatable)')
    .option('--days <n>', 'validity in days', (v) => Number(v))
    .option('--cert <file>', 'where to write the certificate chain (PEM)', 'gateway.crt')
    .option('--key <file>', 'where to write the private key (PEM, 0600)', 'gateway.key')
    .action(async (opts: { san: string[]; days?: number; cert: string; key: string }) => {
      const secret = pkiSecret();
      const bundle = await withLocalDb((db) => loadPki(db, secret));
      const issued = issueGatewayCertificate(bundle, { sans: opts.san, ttlDays: opts.days });
      // Both files or neither: the certificate's file is reserved before the key is written.
      await writeNewFile(opts.cert, '', 0o644);
      try {
        await writeNewFile(opts.key, issued.privateKeyPem, 0o600);
      } catch (error) {
        await unlink(opts.cert).catch(() => {});
        throw error;
      }
      await writeFile(opts.cert, issued.chainPem);
      process.stdout.write(
        `Wrote ${opts.cert} (certificate and serving CA) and ${opts.key} (private key, 0600) for ${opts.san.join(', ')}\n`,
      );
    });
}
