/**
 * The five keys a fleet trusts, each replaceable by a rotation (protocol.md "Trust rotation"): the serving CA
 * (pinned by agents, signs the gateways' certificates), the join-signing key (signs every envelope), the
 * join-encryption key (opens sealed tokens), the node CA (issues node certificates; trusted by the gateway and
 * JoinService, never pinned by agents) and the command-signing key (signs commands; its certificate is the
 * command trust bundle).
 */
export const PKI_KEY_KINDS = ['serving-ca', 'join-signing', 'join-encryption', 'node-ca', 'command-signing'] as const;
export type PkiKeyKind = (typeof PKI_KEY_KINDS)[number];

/**
 * A rotation's phase: `prepared` (the next key is trusted everywhere and used nowhere), `active` (the next key is
 * the one in use; its predecessor stays trusted), `retired` (the predecessor is trusted nowhere; the rotation is
 * over).
 */
export type RotationPhase = 'prepared' | 'active' | 'retired';

/** How each key is named to an operator. */
export const PKI_KEY_LABELS: Record<PkiKeyKind, string> = {
  'serving-ca': 'Serving CA',
  'join-signing': 'Join-signing key',
  'join-encryption': 'Join-encryption key',
  'node-ca': 'Node CA',
  'command-signing': 'Command-signing key',
};
