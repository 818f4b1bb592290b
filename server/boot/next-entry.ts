import type { NextAuthOptions } from 'next-auth';
import type { ApiDeps } from '../api/context';
import { createAuthOptions } from '../auth/auth-options';
import { createConsoleSession, type SignedInOperator } from '../auth/session';
import { processServices, type Services } from './services';

/** What the console's route handlers and server components (app/) are handed. */
interface NextEntry {
  /** next-auth's options (the sign-in route, `getServerSession`), on the process's database. */
  authOptions: NextAuthOptions;
  /** What the tRPC and compute routes and the pages' prefetch hand the API: the services and the session's claim. */
  api(): ApiDeps;
  /** The operator of the request's session, or null (server/auth/session.ts). */
  signedInOperator(): Promise<SignedInOperator | null>;
  /** The process's services, for a page that reads one thing of its own. */
  services(): Services;
}

let entry: NextEntry | undefined;

/**
 * The Next.js adapter's one way into the composition root. Next's production bundle loads its own copy of every
 * module, so its route handlers and server components cannot be handed what the boot server built: they ask
 * here, and only here, for the process's services (`processServices`, the one process-wide slot;
 * server/boot/composition.test.ts checks that nothing else reads it). Nothing is read from the slot until a
 * request needs it: building the entry (a route module's import, `next build`) touches no database.
 */
export function nextEntry(): NextEntry {
  if (entry) return entry;
  const db = () => processServices().db;
  const authOptions = createAuthOptions(db);
  const session = createConsoleSession(authOptions, db);
  entry = {
    authOptions,
    api: () => {
      const services = processServices();
      return { db: services.db, services, sessionOperatorId: session.sessionOperatorId };
    },
    signedInOperator: session.signedInOperator,
    services: processServices,
  };
  return entry;
}
