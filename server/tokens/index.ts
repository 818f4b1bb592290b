/** Join tokens: what JoinService and the modules that mint tokens use. */
export { issueJoinToken, type IssueJoinTokenInput, type IssuedJoinToken } from './issue';
export { createJoinToken, listJoinTokens, revokeJoinToken } from './join-tokens';
export { parseJoinToken, hashTokenSecret, tokenSecretMatches, type ParsedJoinToken } from './secret';
export { JOIN_TOKEN_ROLES, TOKEN_LIMITS, type JoinTokenRecord, type JoinTokenRole, type JoinTokenState } from './schemas';
