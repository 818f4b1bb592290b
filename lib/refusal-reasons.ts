/**
 * The reasons of `security.join.refused`, from the spec's refusals table (joining.md, "Refusals"), said in
 * plain words with what an operator can do about each. The agent is only ever told "Join refused"; this is
 * where the operator learns why.
 */
import { TPM_REFUSAL_REASONS } from './refusal-reasons-tpm';

interface RefusalExplanation {
  meaning: string;
  action: string;
}

/** The attestors whose reasons the console explains; `join:` is the join's own checks, before any attestor. */
const ATTESTORS = ['join-token', 'discovery', 'tpm', 'x509pop'] as const;

/**
 * The admission rules every attestor of a kind shares (the queue cap, the per-site and per-address rate limit,
 * the bounds on claims, TPM enrollment): one explanation per rule, whichever attestor refused.
 */
const SHARED_RULES: Record<string, RefusalExplanation> = {
  'queue-full': {
    meaning:
      "The site's join request queue is full: as many requests as the site's maxPendingRequests wait for a decision, so this new machine was not queued.",
    action:
      'Approve or reject waiting requests (Join requests page), or raise the cap: better-compute sites update <site> --max-pending <count>. The machine asks again on its next attempt.',
  },
  'rate-limited': {
    meaning:
      'Too many new join requests came from this site or from this source address within the rate limit’s window, so this one was not recorded.',
    action:
      'Nothing if a batch of machines is booting: they ask again and are queued once the window passes. If one address floods the site, find and stop it (the Caller column).',
  },
  'enrollment-off': {
    meaning: 'The site does not enroll machines it does not already trust, so this unknown machine was refused instead of queued.',
    action:
      'If the machine should join, turn enrollment on for the site (sites update --tpm-enrollment on), or allow-list its EK hash (--tpm-allow-ek).',
  },
  claims: {
    meaning: 'The machine’s claims are malformed or over the limits (too long, too many values): they were not stored.',
    action: 'Update bcd to a current release; a machine reporting hundreds of disks or interfaces needs a newer agent that trims them.',
  },
};
SHARED_RULES['claims-too-large'] = SHARED_RULES.claims!;
SHARED_RULES['claims-malformed'] = SHARED_RULES.claims!;
SHARED_RULES['malformed-claims'] = SHARED_RULES.claims!;

export const REFUSAL_REASONS: Record<string, RefusalExplanation> = {
  ...TPM_REFUSAL_REASONS,
  'tpm:queue-full': SHARED_RULES['queue-full']!,
  'tpm:rate-limited': SHARED_RULES['rate-limited']!,
  'tpm:enrollment-off': SHARED_RULES['enrollment-off']!,
  'tpm:claims': SHARED_RULES.claims!,
  'discovery:rate-limited': SHARED_RULES['rate-limited']!,
  'discovery:claims': SHARED_RULES.claims!,
  'join:claims': SHARED_RULES.claims!,
  'join:attestor': {
    meaning: 'The machine asked to join with an attestor this server does not run.',
    action: 'Use an attestor the installation offers (join-token, discovery, tpm or x509pop); update bcd if it names an unknown one.',
  },
  'join-token:malformed': {
    meaning: 'What the machine sent is not a join token at all.',
    action: 'Check how the token reaches the machine (BCD_JOIN_TOKEN or standard input): it may be cut off or have extra characters.',
  },
  'join-token:unknown': {
    meaning: 'The token has the right form but no such token exists here.',
    action: 'The machine may use a token of another installation, or one deleted since. Create a new token for it.',
  },
  'join-token:secret-mismatch': {
    meaning: 'The token id exists but its secret is wrong.',
    action: 'Someone may be guessing tokens; if it is your machine, its token was mistyped. Create a new token and revoke the old one.',
  },
  'join-token:revoked': {
    meaning: 'A real token that was revoked: it no longer admits anyone.',
    action: 'Create a new token for the machine if it should join.',
  },
  'join-token:expired': {
    meaning: 'A real token past its lifetime: it no longer admits anyone.',
    action: 'Create a new token, with a longer lifetime if the machine takes long to install.',
  },
  'join-token:exhausted': {
    meaning: 'A real token whose every use is spent: it no longer admits anyone.',
    action: 'Create a token with more uses, or one per machine. A refused join never spends a use.',
  },
  'join-token:role-mismatch': {
    meaning: 'The agent asked for a role the token does not admit.',
    action: 'Use a token made for that role (node, gateway or platform), or fix the agent’s configuration.',
  },
  'join:token': {
    meaning: 'The sealed token could not be opened, or was sealed for another CSR.',
    action:
      'The agent may hold an old well-known document (a rotated sealing key): let it fetch the document again. A replayed request also ends here.',
  },
  'join:expect': {
    meaning: 'The machine’s claims do not match the identifiers the token is pinned to.',
    action: 'Compare the token’s pinned serial, MAC, product or GPU UUID with the machine; create a token pinned to the right machine.',
  },
  'join:placeholder-hardware': {
    meaning: 'The machine reports placeholder identifiers (firmware defaults) and the token is not pinned.',
    action: 'Create a token pinned (expect) to an identifier the machine does report, such as a NIC’s MAC.',
  },
  'join:reclaim': {
    meaning: 'A machine already known joined again without a token that allows reclaim, or in another tenant, site, pool or role.',
    action: 'If the machine was reinstalled, create a token with “Allow reclaim” for the same pool; otherwise remove the old node first.',
  },
  'join:provisioned-missing': {
    meaning: 'The node a provisioned token names no longer exists.',
    action: 'Make new user data for a node that exists (better-compute provisioning user-data --node …).',
  },
  'join:provisioned-retired': {
    meaning: 'The node a provisioned token names was retired after the token was made.',
    action: 'Make new user data for a live node; a retired node never joins again.',
  },
  'join:provisioned-elsewhere': {
    meaning: 'The node a provisioned token names is now in another tenant or site than the token, or is a site agent.',
    action: 'Make new user data for the node where it is now.',
  },
  'join:provisioned-other-machine': {
    meaning: 'The machine that presented a provisioned token is already known as a different node of the tenant.',
    action: 'Retire the other node first, or deploy onto the machine that node is, then make new user data.',
  },
  'join:pool': {
    meaning: 'The token’s pool is missing, archived or runs no daemon.',
    action: 'Create the token for a live pool whose agent is bcd.',
  },
  'join:pool-attestor': {
    meaning: 'The pool does not accept token joins: its policy.joinAttestors does not list join-token.',
    action: 'Join the machine with an attestor the pool lists, or add join-token to the pool’s join attestors.',
  },
  'join:tenant': {
    meaning: 'The pool belongs to another tenant than the token.',
    action: 'Create the token in the tenant that owns the pool.',
  },
  'join:site': {
    meaning: 'The site the machine joins for does not match the token’s pool.',
    action: 'Check the site in the install script against the pool’s site.',
  },
  'discovery:unknown': {
    meaning: 'A PXE-booted machine presented a discovery token that does not exist here.',
    action:
      "Check the site's boot step: it must mint a discovery token for each PXE lease (discoveryTokens.create) and hand that one to the ramdisk.",
  },
  'discovery:malformed': {
    meaning: 'What the ramdisk sent as its discovery token is not a token at all.',
    action: "Check the site's boot step: it must hand the ramdisk the whole bcjt_ token it minted for the lease, without extra characters.",
  },
  'discovery:secret-mismatch': {
    meaning: 'A discovery token id that exists, with a secret that is not its own: a copied or forged token.',
    action:
      'Treat it as an attempt to join as another machine. Find which ramdisk sent it (CSR hash, time) and mint a fresh token for the lease.',
  },
  'discovery:revoked': {
    meaning: 'The machine used a discovery token that was revoked.',
    action: 'Let the boot step mint a new discovery token for the lease (a new PXE boot does this).',
  },
  'discovery:expired': {
    meaning: 'The discovery token expired before the ramdisk joined.',
    action:
      'Reboot the machine into the ramdisk so the boot step mints a new token, or lengthen the token lifetime the boot step asks for.',
  },
  'discovery:exhausted': {
    meaning: 'The discovery token was already spent (it is single use): its machine joined, or another machine used it first.',
    action:
      'If the machine did not join, something else used its token: check the nodes and requests of that MAC. A new PXE boot mints a new token.',
  },
  'discovery:role-mismatch': {
    meaning: 'The machine asked for a role a discovery token does not give (ramdisks join as `ramdisk` through the `discovery` attestor).',
    action: 'Use a join token for installed machines; discovery tokens are only for the PXE ramdisk.',
  },
  'discovery:csr-mismatch': {
    meaning: "The machine's join request was approved for another CSR: this join is not the one the operator approved.",
    action:
      'A machine retries with the same CSR; a different one means a new key (a reboot) or another machine. Reject the request, then let the machine ask again.',
  },
  'discovery:rejected': {
    meaning: "An operator rejected this machine's join request.",
    action: 'Nothing, if the rejection stands. Otherwise reboot the machine into the ramdisk so it asks again with a new discovery token.',
  },
  'discovery:consumed': {
    meaning: 'The approved join request was already used by a join.',
    action: 'The machine joined already; look for its node. A second join needs a new request (a new PXE boot).',
  },
  'discovery:request-expired': {
    meaning: 'The join request expired before an operator decided, or its approval expired before the machine came back.',
    action: "Reboot the machine into the ramdisk to ask again, and approve within the site's pending TTL (or with a longer approval TTL).",
  },
  'discovery:queue-full': {
    ...SHARED_RULES['queue-full']!,
    action:
      'Approve or reject waiting requests (Join requests page), or raise the cap: better-compute sites update <site> --max-pending <count>. The machine asks again on its next PXE boot.',
  },
  'join:malformed': {
    meaning: 'The join request itself was malformed (not the token).',
    action: 'Usually a broken or foreign client; update bcd to a current release.',
  },
  'join:csr': {
    meaning: 'The certificate signing request was invalid or not signed by its key.',
    action: 'Update bcd; if it persists, the machine’s key store may be damaged.',
  },
  'x509pop:certificate': {
    meaning: "An x509pop re-join presented something that is not one of this installation's node certificates.",
    action: 'Usually a broken or foreign client; update bcd. The machine can join again with a token.',
  },
  'x509pop:tpm-bound': {
    meaning:
      "The node's certificate is bound to its TPM: it re-joins only with TPM key attestation, which this server does not verify yet.",
    action: 'Join the machine again with a token: bcd join --reset --yes.',
  },
  'x509pop:proof': {
    meaning: "The re-join's proof did not verify under the key of the certificate it presented.",
    action: "Someone without the node's key may be trying to re-join as it. If it is your machine, join it again with a token.",
  },
  'x509pop:certificate-unknown': {
    meaning: 'The certificate presented for an x509pop re-join was never issued here (not byte for byte a certificate of a node).',
    action: 'The machine may belong to another installation, or its node was deleted. Join it with a token.',
  },
  'x509pop:generation': {
    meaning: 'The certificate is of an older identity of the node: the node was re-joined or reclaimed since.',
    action: 'Nothing, if the node is connected with its new identity. Otherwise join the machine again with a token.',
  },
  'x509pop:revoked': {
    meaning: "The node's certificate was revoked (revoke identity or delete): it no longer re-joins.",
    action: 'Join the machine again with a token if it should come back.',
  },
  'x509pop:node-retired': {
    meaning: 'The node is retired.',
    action: 'Join the machine as a new node with a token if it should come back.',
  },
  'x509pop:role': {
    meaning: "A ramdisk identity tried to re-join: a ramdisk's life is capped and it does not re-join.",
    action: 'Boot the machine into the ramdisk again.',
  },
  'x509pop:not-expired': {
    meaning: 'The certificate presented for a re-join has not expired: a live certificate renews instead.',
    action: "Check the machine's clock; the agent renews through the gateway.",
  },
  'x509pop:expired': {
    meaning: 'The certificate expired 7 days ago or more: too long for an x509pop re-join.',
    action: 'Join the machine again with a token: bcd join --reset --yes.',
  },
  'x509pop:pool-attestor': {
    meaning: "The node's pool does not admit x509pop re-joins (policy.joinAttestors does not list x509pop).",
    action: "Add x509pop to the pool's join attestors if machines may re-join after being offline, or join it again with a token.",
  },
  'x509pop:pool': {
    meaning: "The node's pool is archived, runs no daemon, or no longer matches the node's tenant and site.",
    action: 'Join the machine with a token into a live pool.',
  },
  'x509pop:rate-limited': {
    meaning: 'Too many x509pop re-joins started from this address in the last minute (BETTER_COMPUTE_CHALLENGES_PER_ADDRESS).',
    action:
      'Nothing, if many machines behind one address are coming back at once: they retry. Otherwise look for whoever is flooding from it.',
  },
  'x509pop:nonce': {
    meaning: 'The re-join answered a challenge that is unknown, already used, expired, or issued for another request.',
    action: 'Nothing: the agent starts the re-join again. Repeated ones may be a replay attempt.',
  },
};

/** The explanation of `reason`; an unknown reason still says what to read. */
export function explainRefusal(reason: string): RefusalExplanation {
  const known = REFUSAL_REASONS[reason];
  if (known) return known;
  const colon = reason.indexOf(':');
  const [attestor, rule] = [reason.slice(0, colon), reason.slice(colon + 1)];
  const shared = colon > 0 && (ATTESTORS as readonly string[]).includes(attestor) ? SHARED_RULES[rule] : undefined;
  return (
    shared ?? {
      meaning: 'A reason this console does not know yet.',
      action: 'See the refusals table of the joining guide for this reason.',
    }
  );
}
