import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCliInProcess as runCli, startApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { insertApiKey } from '../api-keys/api-keys';
import { captureStderr, createTestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { acceptInvitation } from './invitations';
import { createOperator, loadOperatorPrincipal } from './operators';

const PASSWORD = 'correct-horse-battery-staple';
const SMTP_USER = 'mailer';
const SMTP_PASS = 's3cret/p@ss-hunter2';
const SMTP_CREDENTIALS = `${SMTP_USER}:${encodeURIComponent(SMTP_PASS)}`;
const CONSOLE = 'https://compute.example.com';

interface Received {
  from: string;
  to: string[];
  raw: string;
}

/** A real SMTP server on a free local port that requires the test's credentials and keeps what it receives. */
async function startSmtpServer(options: SMTPServerOptions = {}) {
  const received: Received[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASS) callback(null, { user: SMTP_USER });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const from = session.envelope.mailFrom;
        received.push({
          from: from ? from.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
    logger: false,
    ...options,
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  return { port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The text body of a received mail, decoded from the transfer encoding nodemailer chose. */
function bodyOf(raw: string): { headers: string; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split);
  const body = raw.slice(split + 4);
  const encoding = /^Content-Transfer-Encoding:\s*(\S+)/im.exec(headers)?.[1]?.toLowerCase();
  if (encoding === 'base64') return { headers, text: Buffer.from(body, 'base64').toString('utf8') };
  if (encoding === 'quoted-printable') {
    const bytes = body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    return { headers, text: Buffer.from(bytes, 'latin1').toString('utf8') };
  }
  return { headers, text: body };
}

async function tenantWithAdmin() {
  const db = testDb();
  const t = await createTestTenant(db);
  const adminEmail = `admin-${randomBytes(4).toString('hex')}@example.com`;
  const { id } = await createOperator(db, {
    email: adminEmail,
    name: 'Ada Admin',
    password: PASSWORD,
    tenantId: t.tenantId,
    role: 'admin',
  });
  return { t, caller: createCaller({ db, principal: (await loadOperatorPrincipal(db, id))! }) };
}

describe('invitations sent by SMTP', { timeout: 60_000 }, () => {
  const saved = { ...process.env };
  let capture: ReturnType<typeof captureStderr>;
  const stderr = () => capture.lines.join('');
  beforeEach(() => {
    process.env.NEXTAUTH_URL = CONSOLE;
    process.env.BETTER_COMPUTE_LOG_LEVEL = 'error';
    capture = captureStderr();
  });
  afterEach(() => {
    capture.stop();
    process.env = { ...saved };
  });

  it('without BETTER_COMPUTE_SMTP_URL, the answer carries the link only: emailed false, no error', async () => {
    delete process.env.BETTER_COMPUTE_SMTP_URL;
    const { t, caller } = await tenantWithAdmin();
    const created = await caller.invitations.create({
      tenantId: t.tenantId,
      email: `quiet-${randomBytes(4).toString('hex')}@example.com`,
      role: 'viewer',
    });
    expect(created).toMatchObject({ state: 'pending', emailed: false, emailError: null });
    expect(created.token).toMatch(/^bcinv_/);
  });

  it('mails the link to the invited address (tenant, role, inviter, expiry), and the link in the mail accepts the invitation', async () => {
    const smtp = await startSmtpServer();
    try {
      process.env.BETTER_COMPUTE_SMTP_URL = `smtp://${SMTP_CREDENTIALS}@127.0.0.1:${smtp.port}`;
      const { t, caller } = await tenantWithAdmin();
      const invitee = `mailed-${randomBytes(4).toString('hex')}@example.com`;
      const created = await caller.invitations.create({ tenantId: t.tenantId, email: invitee, role: 'approver' });
      expect(created).toMatchObject({ email: invitee, role: 'approver', state: 'pending', emailed: true, emailError: null });
      expect(created.token).toMatch(/^bcinv_/); // still shown once in the answer

      expect(smtp.received).toHaveLength(1);
      const [mail] = smtp.received;
      expect(mail!.to).toEqual([invitee]);
      expect(mail!.from).toBe('no-reply@compute.example.com');
      const { headers, text } = bodyOf(mail!.raw);
      expect(headers).toMatch(/^Content-Type: text\/plain/im);
      expect(headers).toMatch(/^From: Better Compute <no-reply@compute\.example\.com>/im);
      expect(headers).toMatch(new RegExp(`^Subject: Your invitation to ${t.name} on Better Compute`, 'im'));
      expect(text).toContain(`Ada Admin invited you to the tenant ${t.name} on Better Compute, as approver.`);
      expect(text).toContain(`The link expires on ${created.expiresAt.slice(0, 10)} `);
      const link = new RegExp(`${CONSOLE}/invite#(bcinv_\\S+)`).exec(text);
      expect(link, text).not.toBeNull();

      const accepted = await acceptInvitation(testDb(), { token: link![1]!, name: 'Mailed One', password: PASSWORD });
      expect(accepted).toMatchObject({ email: invitee, tenantId: t.tenantId, role: 'approver' });
      expect(await testDb().invitation.findUniqueOrThrow({ where: { id: created.id } })).toMatchObject({ acceptedBy: accepted.operatorId });
    } finally {
      await smtp.close();
    }
  });

  it('a mail server that is down costs the mail, not the invitation: emailed false, the reason in the answer and the log, no secret', async () => {
    const down = await startSmtpServer();
    await down.close(); // a port nothing listens on any more
    process.env.BETTER_COMPUTE_SMTP_URL = `smtp://${SMTP_CREDENTIALS}@127.0.0.1:${down.port}`;
    const { t, caller } = await tenantWithAdmin();
    const invitee = `down-${randomBytes(4).toString('hex')}@example.com`;
    const created = await caller.invitations.create({ tenantId: t.tenantId, email: invitee, role: 'viewer' });
    expect(created).toMatchObject({
      email: invitee,
      state: 'pending',
      emailed: false,
      emailError: expect.stringMatching(/^The invitation mail was not sent: .*ECONNREFUSED/),
    });

    const log = stderr();
    expect(log).toContain(`invitation mail to ${invitee} via 127.0.0.1:${down.port} not sent`);
    for (const secret of [SMTP_PASS, encodeURIComponent(SMTP_PASS), created.token.split('.')[1]!]) {
      expect(log).not.toContain(secret);
      expect(created.emailError).not.toContain(secret);
    }
    expect(await acceptInvitation(testDb(), { token: created.token, name: 'Down One', password: PASSWORD })).toMatchObject({
      email: invitee,
      role: 'viewer',
    });
  });

  it('smtp:// upgrades with STARTTLS when offered and verifies the certificate: an untrusted one sends nothing in the clear', async () => {
    // smtp-server's built-in localhost certificate, which this process does not trust. The server would take
    // the login and the mail in the clear (allowInsecureAuth), so a send that fails proves the upgrade.
    const smtp = await startSmtpServer({ disabledCommands: [] });
    try {
      process.env.BETTER_COMPUTE_SMTP_URL = `smtp://${SMTP_CREDENTIALS}@127.0.0.1:${smtp.port}`;
      const { t, caller } = await tenantWithAdmin();
      const created = await caller.invitations.create({
        tenantId: t.tenantId,
        email: `tls-${randomBytes(4).toString('hex')}@example.com`,
        role: 'viewer',
      });
      expect(created).toMatchObject({ state: 'pending', emailed: false, emailError: expect.stringMatching(/certificate/i) });
      expect(smtp.received).toEqual([]);
      expect(created.emailError).not.toContain(SMTP_PASS);
    } finally {
      await smtp.close();
    }
  });

  it('a refused login is reported without the password', async () => {
    const smtp = await startSmtpServer();
    try {
      process.env.BETTER_COMPUTE_SMTP_URL = `smtp://${SMTP_USER}:wrong-hunter3@127.0.0.1:${smtp.port}`;
      const { t, caller } = await tenantWithAdmin();
      const created = await caller.invitations.create({
        tenantId: t.tenantId,
        email: `auth-${randomBytes(4).toString('hex')}@example.com`,
        role: 'viewer',
      });
      expect(created).toMatchObject({ emailed: false, emailError: expect.stringMatching(/EAUTH/) });
      expect(created.emailError).not.toContain('wrong-hunter3');
      expect(stderr()).not.toContain('wrong-hunter3');
      expect(smtp.received).toEqual([]);
    } finally {
      await smtp.close();
    }
  });

  it('operators invite (REST, the real CLI) says it was sent, or why not', async () => {
    const smtp = await startSmtpServer();
    const api = await startApiServer(testDb());
    try {
      process.env.BETTER_COMPUTE_SMTP_URL = `smtp://${SMTP_CREDENTIALS}@127.0.0.1:${smtp.port}`;
      const { t } = await tenantWithAdmin();
      const { key } = await insertApiKey(testDb(), { tenantId: t.tenantId, role: 'admin', name: 'cli' }, 'test');
      const env = { BETTER_COMPUTE_URL: api.url, BETTER_COMPUTE_API_KEY: key };
      const invitee = `cli-${randomBytes(4).toString('hex')}@example.com`;
      const sent = await runCli(['operators', 'invite', '--tenant', t.tenantId, '--email', invitee, '--role', 'viewer'], env);
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout).toMatch(
        new RegExp(
          `^Invited ${invitee} as viewer \\(invitation inv_\\w+, until \\S+\\)\\. Sent to ${invitee}\\. The link is shown only once:\\n\\S+/invite#bcinv_`,
        ),
      );
      expect(smtp.received.map((m) => m.to)).toEqual([[invitee]]);

      await smtp.close();
      const json = await runCli(
        ['operators', 'invite', '--tenant', t.tenantId, '--email', `cli2-${invitee}`, '--role', 'viewer', '--json'],
        env,
      );
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({
        emailed: false,
        emailError: expect.stringMatching(/ECONNREFUSED/),
        state: 'pending',
      });
      const unsent = await runCli(['operators', 'invite', '--tenant', t.tenantId, '--email', `cli3-${invitee}`, '--role', 'viewer'], env);
      expect(unsent.stdout).toMatch(/\)\. The invitation mail was not sent: .*ECONNREFUSED[^\n]*\. The link is shown only once:\n/);
    } finally {
      await api.close();
      await smtp.close().catch(() => {});
    }
  });
});
