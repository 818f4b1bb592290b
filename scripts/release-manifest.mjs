// Writes a signed release manifest (docs/operator-guide.md, "Signed release manifests") beside a build's
// SHA256SUMS: `npm run build:bcd -- --release-key FILE` calls it after building, and
// `node scripts/release-manifest.mjs --dir dist/bcd/<version> --release-key FILE` signs an existing build.
// The generator (`--release-manifest URL --release-pins PIN`) trusts the digests only through the key's pin,
// which this prints. The key stays on the build machine: the manifest carries its public half only.
import { createHash, createPrivateKey, createPublicKey, createSign, generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The release key at `file` (a PKCS#8 P-256 PEM), generated there (0600, never overwritten) when missing. */
export function loadOrCreateReleaseKey(file) {
  if (!existsSync(file)) {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    // 'wx': of two builds racing to create it, the second fails rather than sign with a key nobody keeps.
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    return { key: privateKey, created: true };
  }
  const key = createPrivateKey(readFileSync(file));
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error(`${file} is not a P-256 private key`);
  }
  return { key, created: false };
}

/** Signs the artifacts that `dir/SHA256SUMS` lists into `dir/release-manifest.json`; returns the key's pin. */
export function writeReleaseManifest({ dir, version, keyFile }) {
  const { key, created } = loadOrCreateReleaseKey(keyFile);
  const artifacts = {};
  for (const line of readFileSync(path.join(dir, 'SHA256SUMS'), 'utf8').split('\n')) {
    const match = /^([0-9a-f]{64}) [ *](linux-(?:amd64|arm64))$/.exec(line.trim());
    if (match) artifacts[match[2]] = { sha256: match[1], size: statSync(path.join(dir, match[2])).size };
  }
  if (Object.keys(artifacts).length === 0) throw new Error(`${dir}/SHA256SUMS lists no linux-amd64 or linux-arm64 artifact`);
  const payload = Buffer.from(JSON.stringify({ name: 'bcd', version, artifacts }), 'utf8');
  const signature = createSign('sha256').update(payload).sign({ key, dsaEncoding: 'der' });
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const manifest = { payload: payload.toString('base64'), signature: signature.toString('base64'), publicKey: spki.toString('base64') };
  const out = path.join(dir, 'release-manifest.json');
  writeFileSync(`${out}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(`${out}.tmp`, out);
  return { file: out, pin: `sha256/${createHash('sha256').update(spki).digest('base64')}`, created };
}

/** The value after `flag` on the command line, if any. */
export const argValue = (flag) => {
  const at = process.argv.indexOf(flag);
  return at > 0 ? process.argv[at + 1] : undefined;
};

/** Prints what an operator needs: where the manifest is and the pin to pass to --release-pins. */
export function reportReleaseManifest({ file, pin, created }, keyFile) {
  if (created) console.log(`» Generated the release key ${keyFile} (0600): keep it, every install script pins it`);
  console.log(`» Signed ${file}`);
  console.log(`» Release pin: ${pin}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = argValue('--dir');
  const keyFile = argValue('--release-key');
  if (!dir || !keyFile) {
    console.error('usage: node scripts/release-manifest.mjs --dir dist/bcd/<version> --release-key FILE');
    process.exit(2);
  }
  try {
    reportReleaseManifest(writeReleaseManifest({ dir, version: path.basename(path.resolve(dir)), keyFile }), keyFile);
  } catch (error) {
    console.error(`» ${error.message}`);
    process.exit(1);
  }
}
