import type { ReactNode } from 'react';

/** The card of a page before the console (sign-in, invitation, new password): the brand, a heading, the form. */
export function SignInCard({ title, footnote, children }: { title: string; footnote?: ReactNode; children: ReactNode }) {
  return (
    <main className="login">
      <div className="login-card">
        <div className="login-brand">
          <span className="brand-mark" aria-hidden="true" />
          <span>Better Compute</span>
        </div>
        <h1>{title}</h1>
        {children}
      </div>
      {footnote && <p className="login-footnote">{footnote}</p>}
    </main>
  );
}
