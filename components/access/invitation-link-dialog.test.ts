import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { CreatedInvitation } from './invite-dialog';
import { InvitationLinkDialog } from './operators-view';

const created: CreatedInvitation = {
  email: 'ada@example.com',
  role: 'approver',
  expiresAt: '2026-12-08T23:00:00.000Z',
  link: 'https://compute.example.com/invite#bcinv_inv_x.y',
  emailed: false,
  emailError: null,
};
const render = (invitation: CreatedInvitation) =>
  renderToStaticMarkup(createElement(InvitationLinkDialog, { invitation, onDone: () => {} }));

describe('the invitation link dialog', () => {
  it('says "Sent to <email>" when the server mailed the link, and still shows the link once', () => {
    const html = render({ ...created, emailed: true });
    expect(html).toContain('Sent to <strong>ada@example.com</strong>.');
    expect(html).not.toContain('yourself');
    expect(html).toContain(created.link);
  });

  it('asks the admin to send it without SMTP, and names why when a send failed', () => {
    expect(render(created)).toContain('Send this link to <strong>ada@example.com</strong> yourself (no mail is sent)');
    const failed = render({ ...created, emailError: 'The invitation mail was not sent: ESOCKET: connect ECONNREFUSED 127.0.0.1:25' });
    expect(failed).toContain('yourself (the mail could not be sent)');
    expect(failed).toMatch(/role="alert">The invitation mail was not sent: ESOCKET: connect ECONNREFUSED 127\.0\.0\.1:25</);
    expect(failed).not.toContain('Sent to');
  });
});
