import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { spkiPin } from '../../protocol/pins';
import { commandSignerOf, signCommand } from './sign';
import { createPkiBundle } from '../pki/bundle/bundle';
import { activateInBundle, prepareInBundle } from '../pki/rotation/bundle-steps';
import { pkiRuntimeOf } from '../join/join-runtime';

const body = { status: 'command' as const, commandId: 'cmd_01abcdefgh', nodeId: 'node_x', kind: 'bcd.doctor', args: {}, notAfter: 1 };
const key = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const verifies = (bytes: Buffer, sig: string, k: ReturnType<typeof key>) =>
  verify('sha256', bytes, { key: createPublicKey(k), dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url'));

describe('signCommand', () => {
  it('signs with the key in use, and with both keys (sigs, the one in use first) while a rotation is under way', () => {
    const inUse = key();
    const other = key();
    const single = signCommand({ key: inUse }, body);
    const bytes = Buffer.from(single.body, 'base64url');
    expect(JSON.parse(bytes.toString('utf8'))).toEqual(body);
    expect(verifies(bytes, single.sig, inUse)).toBe(true);
    expect(single.sigs).toBeUndefined();

    const rotating = signCommand(commandSignerOf({ commandSigningKey: inUse, commandOtherSigningKey: other })!, body);
    expect(rotating.sigs!.map((s) => s.pin)).toEqual([spkiPin(inUse), spkiPin(other)]);
    expect(rotating.sigs![0]!.sig).toBe(rotating.sig);
    expect(verifies(bytes, rotating.sigs![1]!.sig, other)).toBe(true);
    expect(verifies(bytes, rotating.sigs![1]!.sig, inUse)).toBe(false);
    expect(commandSignerOf({})).toBeNull();
  });
});

describe('the PKI runtime’s command signer', () => {
  it('holds the other command key while a command-signing rotation is prepared or active, and signs with the one in use', () => {
    const bundle = createPkiBundle({ trustDomain: 'test.example.com' });
    expect(commandSignerOf(pkiRuntimeOf(bundle))!.other).toBeUndefined();
    const next = createPkiBundle({ trustDomain: 'test.example.com' }).commandCa;
    const prepared = prepareInBundle(bundle, 'command-signing', { ...next, phase: 'prepared' });
    const signer = commandSignerOf(pkiRuntimeOf(prepared))!;
    expect(spkiPin(signer.key)).toBe(spkiPin(bundle.commandCa.certificatePem));
    expect(spkiPin(signer.other!)).toBe(spkiPin(next.certificatePem));
    const active = commandSignerOf(pkiRuntimeOf(activateInBundle(prepared, 'command-signing')))!;
    expect(spkiPin(active.key)).toBe(spkiPin(next.certificatePem));
    expect(spkiPin(active.other!)).toBe(spkiPin(bundle.commandCa.certificatePem));
  });
});
