import { discoveryAttestor } from './discovery/discovery';
import { joinTokenAttestor } from './join-token/join-token';
import { tpmAttestor } from './tpm/attestor';
import { PROTOCOL_ATTESTORS } from './names';
import type { Attestor } from './types';
import { x509popAttestor } from './x509pop/x509pop';

/** Each attestor has its own state type: the registry holds them all. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each attestor has its own state type
type AnyAttestor = Attestor<any>;

const registry = new Map<string, AnyAttestor>();

const NAME = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * Registers an attestor under its name: the one place the server's attestors are listed (below).
 * Registration happens at module load, in every thread that prepares joins (a preparation thread loads this
 * module too); a test may register a fake one in its own process, where JoinService then prepares in process.
 */
export function registerAttestor(attestor: AnyAttestor): void {
  if (!NAME.test(attestor.name)) throw new Error(`attestor name ${JSON.stringify(attestor.name)} is not a lowercase name`);
  if (registry.has(attestor.name)) throw new Error(`attestor ${attestor.name} is registered twice`);
  registry.set(attestor.name, attestor);
}

/** Takes an attestor out again (tests that registered a fake one). */
export function unregisterAttestor(name: string): void {
  registry.delete(name);
}

/** The registered attestor of that name, or undefined (the join is then refused by name, `join:attestor`). */
export const attestorNamed = (name: string): AnyAttestor | undefined => registry.get(name);

/**
 * Whether a join may name this attestor at all: one protocol.md defines (refused by name, `join:attestor`,
 * while it is not registered) or one registered here. Anything else is malformed, so events and metric
 * labels stay bounded.
 */
export const isKnownAttestor = (name: string): boolean => (PROTOCOL_ATTESTORS as readonly string[]).includes(name) || registry.has(name);

// The attestors this server runs.
registerAttestor(joinTokenAttestor);
registerAttestor(discoveryAttestor);
registerAttestor(tpmAttestor);
registerAttestor(x509popAttestor);
