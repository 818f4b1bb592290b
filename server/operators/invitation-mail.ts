import type { Db } from '../db/client';
import { consoleOrigin } from '../http/request-rules';
import { logError } from '../log';
import { mailFailureReason, sendPlainMail } from '../mail/send-mail';
import { smtpConfigFromEnv } from '../mail/smtp-config';
import { operatorNames } from './operator-names';

/** What an invitation's answer says about its mail: `emailed` false with no error when no SMTP is configured. */
export interface InvitationMailOutcome {
  emailed: boolean;
  /** Why the mail was not sent, when a send was tried and failed (the invitation exists regardless). */
  emailError: string | null;
}

interface SentInvitation {
  tenantId: string;
  email: string;
  role: string;
  createdBy: string;
  expiresAt: string;
  token: string;
}

/** The console link of an invitation, on NEXTAUTH_URL's origin (the token rides in the fragment). */
function invitationMailLink(token: string, env: Record<string, string | undefined> = process.env): string {
  return `${consoleOrigin(env.NEXTAUTH_URL) ?? `http://localhost:${env.PORT || 3000}`}/invite#${token}`;
}

/** The mail's plain text: who invited whom to which tenant with which role, the link and its expiry. */
function invitationMailText(input: { tenantName: string; role: string; inviter: string; link: string; expiresAt: string }): string {
  return [
    `${input.inviter} invited you to the tenant ${input.tenantName} on Better Compute, as ${input.role}.`,
    '',
    'Open this link to accept (it works once):',
    input.link,
    '',
    `The link expires on ${input.expiresAt
      .replace('T', ' ')
      .replace(/\.\d+Z$/, 'Z')
      .replace(/Z$/, ' UTC')}.`,
    'If you did not expect this invitation, ignore this mail.',
    '',
  ].join('\n');
}

/**
 * Mails an invitation's link to the invited address when BETTER_COMPUTE_SMTP_URL is set. Called after the
 * invitation is committed and never throws: a mail server that is down or refuses costs the mail, never the
 * invitation (the answer still carries the link). A failure is logged without the password or the token.
 */
export async function mailInvitation(
  db: Db,
  invitation: SentInvitation,
  env: Record<string, string | undefined> = process.env,
): Promise<InvitationMailOutcome> {
  const config = smtpConfigFromEnv(env);
  if (!config) return { emailed: false, emailError: null };
  try {
    const [tenant, names] = await Promise.all([
      db.tenant.findUniqueOrThrow({ where: { id: invitation.tenantId }, select: { name: true } }),
      operatorNames(db, [invitation.createdBy]),
    ]);
    const text = invitationMailText({
      tenantName: tenant.name,
      role: invitation.role,
      inviter: names.get(invitation.createdBy) ?? `An administrator (${invitation.createdBy})`,
      link: invitationMailLink(invitation.token, env),
      expiresAt: invitation.expiresAt,
    });
    await sendPlainMail(config, { to: invitation.email, subject: `Your invitation to ${tenant.name} on Better Compute`, text });
    return { emailed: true, emailError: null };
  } catch (error) {
    const reason = mailFailureReason(config, error).split(invitation.token).join('[redacted]');
    logError(`invitation mail to ${invitation.email} via ${config.host}:${config.port} not sent`, reason);
    return { emailed: false, emailError: `The invitation mail was not sent: ${reason}` };
  }
}
