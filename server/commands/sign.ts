import { sign, type KeyObject } from 'node:crypto';
import type { CommandBody } from '../../protocol/command-wire';
import { spkiPin } from '../../protocol/pins';

/** The command-signing keys of a PKI runtime: the key in use, and the other one while a rotation is under way. */
export interface CommandSigner {
  key: KeyObject;
  other?: KeyObject;
}

/** A signed command envelope (protocol.md "Answers"): `sigs` only while two command keys are trusted. */
interface SignedCommand {
  body: string;
  sig: string;
  sigs?: Array<{ pin: string; sig: string }>;
}

const es256 = (bytes: Buffer, key: KeyObject) => sign('sha256', bytes, { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
const pins = new WeakMap<KeyObject, string>();
const pinOf = (key: KeyObject) => {
  let pin = pins.get(key);
  if (!pin) pins.set(key, (pin = spkiPin(key)));
  return pin;
};

/** The signer of a PKI runtime (server/join/join-runtime.ts), or null when it holds no command key. */
export function commandSignerOf(
  runtime: { commandSigningKey?: KeyObject; commandOtherSigningKey?: KeyObject } | null,
): CommandSigner | null {
  if (!runtime?.commandSigningKey) return null;
  return { key: runtime.commandSigningKey, ...(runtime.commandOtherSigningKey ? { other: runtime.commandOtherSigningKey } : {}) };
}

/**
 * The `command` event's data: `body` serialized once and signed by the command key in use (`sig`); while a
 * command-signing rotation is prepared or active, `sigs` holds one signature per trusted command key, the key
 * in use first, as signTrusted does for the join-signing key.
 */
export function signCommand(signer: CommandSigner, body: CommandBody): SignedCommand {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  const sig = es256(bytes, signer.key);
  const envelope: SignedCommand = { body: bytes.toString('base64url'), sig };
  if (signer.other)
    envelope.sigs = [
      { pin: pinOf(signer.key), sig },
      { pin: pinOf(signer.other), sig: es256(bytes, signer.other) },
    ];
  return envelope;
}
