import { KNOWN_ATTESTORS } from '../../../protocol/join-wire';

// The attestor names protocol.md defines. A join naming anything else is malformed (unless registered), so
// events and metric labels stay bounded; a name defined here but not registered in ./index.ts is refused by
// name (`join:attestor`).

export const PROTOCOL_ATTESTORS = KNOWN_ATTESTORS;

/** What an empty `attestor` means (protocol.md: `""` means `join-token`). */
export const DEFAULT_ATTESTOR = 'join-token';
