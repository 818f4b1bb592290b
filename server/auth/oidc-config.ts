import { z } from 'zod';
import { DomainError } from '../../protocol/errors';
import { ROLES, type Role } from '../../protocol/api/permissions';

/** One mapping of the role map: members of the group get `role` in the tenant named `tenant`. */
export interface GroupMapping {
  tenant: string;
  role: Role;
}

export interface OidcConfig {
  /** The issuer URL; its discovery document is `<issuer>/.well-known/openid-configuration`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The sign-in button's label. */
  name: string;
  /** The ID token claim holding the person's groups. */
  groupsClaim: string;
  /** Group → the memberships it gives (a group may map to several tenants). */
  roleMap: ReadonlyMap<string, readonly GroupMapping[]>;
}

const mapping = z.strictObject({ tenant: z.string().trim().min(1), role: z.enum(ROLES) });
// One mapping or a list of them; read as a list, so an error names the entry (`ops.0.role`).
const roleMapSchema = z.record(
  z.string().min(1),
  z.preprocess((value) => (Array.isArray(value) ? value : [value]), z.array(mapping).min(1)),
);

const bad = (message: string) => new DomainError('INVALID_CONFIG', message);

/**
 * OpenID Connect settings from the environment, or null when `BETTER_COMPUTE_OIDC_ISSUER` is not set. A
 * half-configured provider stops the start (checkStartupConfig) with the variable to fix, never a sign-in
 * button that cannot work. The client secret is never part of an error message.
 */
export function oidcConfigFromEnv(env: Record<string, string | undefined> = process.env): OidcConfig | null {
  const issuer = env.BETTER_COMPUTE_OIDC_ISSUER?.trim();
  if (!issuer) return null;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw bad(`BETTER_COMPUTE_OIDC_ISSUER must be a URL, not ${issuer}`);
  }
  const isLoopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback)) {
    throw bad('BETTER_COMPUTE_OIDC_ISSUER must be an https:// URL (http:// only on a loopback address)');
  }
  const clientId = env.BETTER_COMPUTE_OIDC_CLIENT_ID?.trim();
  const clientSecret = env.BETTER_COMPUTE_OIDC_CLIENT_SECRET;
  if (!clientId) throw bad('BETTER_COMPUTE_OIDC_CLIENT_ID must be set with BETTER_COMPUTE_OIDC_ISSUER');
  if (!clientSecret) throw bad('BETTER_COMPUTE_OIDC_CLIENT_SECRET must be set with BETTER_COMPUTE_OIDC_ISSUER');
  const rawMap = env.BETTER_COMPUTE_OIDC_ROLE_MAP;
  if (!rawMap?.trim()) throw bad('BETTER_COMPUTE_OIDC_ROLE_MAP must be set with BETTER_COMPUTE_OIDC_ISSUER: without it nobody gets access');
  let json: unknown;
  try {
    json = JSON.parse(rawMap);
  } catch {
    throw bad('BETTER_COMPUTE_OIDC_ROLE_MAP must be a JSON object: {"<group>": {"tenant": "<tenant name>", "role": "<role>"}}');
  }
  const parsed = roleMapSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw bad(`BETTER_COMPUTE_OIDC_ROLE_MAP: ${issue.path.join('.') || 'the map'}: ${issue.message} (roles: ${ROLES.join(', ')})`);
  }
  const roleMap = new Map(Object.entries(parsed.data));
  return {
    issuer: issuer.replace(/\/+$/, ''),
    clientId,
    clientSecret,
    name: env.BETTER_COMPUTE_OIDC_NAME?.trim() || 'Single sign-on',
    groupsClaim: env.BETTER_COMPUTE_OIDC_GROUPS_CLAIM?.trim() || 'groups',
    roleMap,
  };
}

/**
 * Whether the email and password form signs in everyone (the default) or only root tenant admins
 * (`BETTER_COMPUTE_PASSWORD_SIGN_IN=false`: single sign-on for the team, the password kept for break-glass).
 */
export function passwordSignInForEveryone(env: Record<string, string | undefined> = process.env): boolean {
  const value = env.BETTER_COMPUTE_PASSWORD_SIGN_IN?.trim().toLowerCase();
  if (value === undefined || value === '' || value === 'true') return true;
  if (value === 'false') return false;
  throw bad(`BETTER_COMPUTE_PASSWORD_SIGN_IN must be true or false, not ${env.BETTER_COMPUTE_PASSWORD_SIGN_IN}`);
}
