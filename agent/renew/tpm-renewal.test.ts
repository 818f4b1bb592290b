import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLeafNames } from '../../protocol/certificate-names';
import { renewPopMessage } from '../../protocol/renew-wire';
import { BASE, type RenewHarness } from '../../test/renew-harness';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { renewRefusalReasons as reasons, startTwoTpms, tpmBoundNode as tpmBoundNodeIn, type TwoTpms } from '../../test/tpm-node';
import { TpmError } from '../tpm/client';
import { withTpm } from '../tpm/identify';
import { encodeKeyBlob, type TpmKeyBlob } from '../tpm/keys';
import { p256SpkiOf } from '../tpm/public-area';
import { prepareTpmRenewal, signWithTpmKey, TpmRenewalError } from '../tpm/renewal';
import { postToGateway } from './gateway-client';
import { AK_KEY_FILE } from '../identity-store';
import { loadIdentity, loadNodeIdentity, type TpmLoadedIdentity } from './identity';
import { RENEWAL_EXIT, runRenewalLoop } from './loop';
import { renewBodyJson, renewIdentity } from './renew';
import { clientIdentityOf } from './tpm-renewal';
import { runSessionLoop } from '../session/loop';
import type { AgentSession } from '../session/session-client';

const PATH = `${BASE}/v1/renew`;
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest();

let r: RenewHarness;
let swtpmA: Swtpm;
let swtpmB: Swtpm;
let akA: TpmKeyBlob;
let statementA: string;
let akB: TpmKeyBlob;
let statementB: string;

let tpms: TwoTpms;

beforeAll(async () => {
  tpms = await startTwoTpms();
  ({ r, swtpmA, swtpmB, akA, statementA, akB, statementB } = tpms);
});

afterAll(() => tpms?.stop());

const tpmBoundNode = () => tpmBoundNodeIn(r, swtpmA.address, { blob: akA, statement: statementA });

const load = (dir: string, address = swtpmA.address) => loadNodeIdentity(dir, { tpm: address }) as Promise<TpmLoadedIdentity>;

describe('bcd with a TPM-held node key, through the real gateway', () => {
  it('renews with key attestation over mutual TLS the TPM signs, twice in a row', async () => {
    const node = await tpmBoundNode();
    const lines: string[] = [];
    const options = { ...r.target, identityDir: node.dir, tpm: swtpmA.address, once: true, log: (l: string) => lines.push(l) };
    expect(await runRenewalLoop(options), lines.join('\n')).toBe(RENEWAL_EXIT.stopped);
    const renewed = await load(node.dir);
    expect(renewed.tpm.nodeKey.publicArea.equals(node.key.publicArea)).toBe(false);
    const names = readLeafNames(renewed.leaf.raw);
    expect(names.spkiDer.equals(p256SpkiOf(renewed.tpm.nodeKey.publicArea))).toBe(true);
    expect(names.uris.slice(1)).toEqual([statementA]);
    expect(await readFile(path.join(node.dir, 'node.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\n/);
    // The renewed key renews in turn: it is in the TPM, and the gateway took its handshake.
    expect(await runRenewalLoop(options), lines.join('\n')).toBe(RENEWAL_EXIT.stopped);
    expect((await load(node.dir)).leaf.serialNumber).not.toBe(renewed.leaf.serialNumber);
    expect(await reasons(node.tenantId, node.nodeId)).toEqual([]);
  });

  it('is refused through the gateway without keyAttestation, and with another TPM’s', async () => {
    const node = await tpmBoundNode();
    const current = await load(node.dir);
    const body = async (made: Awaited<ReturnType<typeof prepareTpmRenewal>>, keyAttestation?: object) => {
      const clientTime = Math.floor(Date.now() / 1000);
      const message = renewPopMessage(made.csr.csrSha256, node.nodeId, clientTime);
      const popSig = await withTpm(swtpmA.address, (tpm) => signWithTpmKey(tpm, node.key, sha256(message)));
      return renewBodyJson({ chain: current.identity.certificateChain, csrDer: made.csr.csrDer, clientTime, popSig, keyAttestation });
    };
    const ownNext = await withTpm(swtpmA.address, (tpm) => prepareTpmRenewal(tpm, { ak: akA, akStatement: statementA }));
    const withoutAttestation = await postToGateway(r.target, clientIdentityOf(current), PATH, await body(ownNext));
    expect(withoutAttestation.status).toBe(403);
    const otherNext = await withTpm(swtpmB.address, (tpm) => prepareTpmRenewal(tpm, { ak: akB, akStatement: statementB }));
    const otherTpm = await postToGateway(r.target, clientIdentityOf(current), PATH, await body(otherNext, otherNext.keyAttestation));
    expect(otherTpm.status).toBe(403);
    expect(await reasons(node.tenantId, node.nodeId)).toEqual(['key-attestation-missing', 'key-attestation-ak']);
  });

  it('fails loudly without sending when the TPM is another one or unavailable, and keeps the identity', async () => {
    const node = await tpmBoundNode();
    const before = await readFile(path.join(node.dir, 'node.key'), 'utf8');
    // TPM B cannot load AK A's blob.
    await expect(renewIdentity(await load(node.dir, swtpmB.address), r.target)).rejects.toBeInstanceOf(TpmError);
    // TPM B's own AK loads, and is not the AK the leaf names.
    await writeFile(path.join(node.dir, AK_KEY_FILE), encodeKeyBlob(akB));
    await expect(renewIdentity(await load(node.dir, swtpmB.address), r.target)).rejects.toThrow(TpmRenewalError);
    await expect(renewIdentity(await load(node.dir, swtpmB.address), r.target)).rejects.toThrow(/not the TPM the node joined with/);
    // No TPM at all where bcd looks.
    await writeFile(path.join(node.dir, AK_KEY_FILE), encodeKeyBlob(akA));
    const stopped = await startSwtpm();
    await stopped.stop();
    await expect(renewIdentity(await load(node.dir, stopped.address), r.target)).rejects.toThrow(/cannot open the TPM/);
    // The software-key loader says what the file is; bcd node's loader refuses a blob the leaf does not certify.
    await expect(loadIdentity(node.dir)).rejects.toThrow(/holds a key in the TPM, which only bcd node can use/);
    await writeFile(path.join(node.dir, 'node.key'), encodeKeyBlob(akA));
    await expect(load(node.dir)).rejects.toThrow(/is not the key of the certificate/);
    await writeFile(path.join(node.dir, 'node.key'), before);
    // Nothing reached the control plane, and nothing changed on disk.
    expect(await reasons(node.tenantId, node.nodeId)).toEqual([]);
    expect(await readFile(path.join(node.dir, 'node.key'), 'utf8')).toBe(before);
  });

  it('opens its session, renews on it, and moves the session to the renewed key', async () => {
    const node = await tpmBoundNode();
    const controller = new AbortController();
    const sessions: AgentSession[] = [];
    const lines: string[] = [];
    let renewals = 0;
    const exit = runSessionLoop({
      ...r.target,
      identityDir: node.dir,
      tpm: swtpmA.address,
      agentVersion: 'test',
      signal: controller.signal,
      log: (line) => lines.push(line),
      // Renew at once, then not again during the test.
      renewalDelay: () => (renewals++ === 0 ? 0 : 3_600_000),
      onSession: (session) => {
        if (session) sessions.push(session);
        if (sessions.length >= 2) controller.abort();
      },
    });
    expect(await exit, lines.join('\n')).toBe(RENEWAL_EXIT.stopped);
    expect(sessions.map((s) => s.welcome.nodeId)).toEqual([node.nodeId, node.nodeId]);
    expect(lines.join('\n')).toMatch(/renewed .* on the session's connection/);
    const renewed = await load(node.dir);
    expect(renewed.tpm.nodeKey.publicArea.equals(node.key.publicArea)).toBe(false);
    expect(sessions[1]!.certificateNotAfter.getTime()).toBe(renewed.notAfter.getTime());
  });
});
