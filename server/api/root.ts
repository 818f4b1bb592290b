import { createCallerFactory, router } from './trpc';
import { apiKeysRouter } from './api-keys/router';
import { eventsRouter } from './events/router';
import { joinTokensRouter } from './join-tokens/router';
import { poolsRouter } from './pools/router';
import { sitesRouter } from './sites/router';
import { tenantsRouter } from './tenants/router';
import { nodesRouter } from './nodes/router';
import { joinRequestsRouter } from './join-requests/router';
import { discoveryTokensRouter } from './discovery-tokens/router';
import { siteTokensRouter } from './site-tokens/router';
import { daemonRouter } from './daemon/router';
import { auditRouter } from './audit/router';
import { overviewRouter } from './overview/router';
import { accountRouter } from './account/router';
import { operatorsRouter } from './operators/router';
import { invitationsRouter } from './invitations/router';
import { approvalRulesRouter } from './approval-rules/router';
import { expectedMachinesRouter } from './expected-machines/router';
import { webhooksRouter } from './webhooks/router';
import { pkiRouter } from './pki/router';
import { provisioningRouter } from './provisioning/router';
import { commandsRouter } from './commands/router';

export const appRouter = router({
  tenants: tenantsRouter,
  sites: sitesRouter,
  pools: poolsRouter,
  joinTokens: joinTokensRouter,
  apiKeys: apiKeysRouter,
  events: eventsRouter,
  nodes: nodesRouter,
  commands: commandsRouter,
  joinRequests: joinRequestsRouter,
  discoveryTokens: discoveryTokensRouter,
  siteTokens: siteTokensRouter,
  daemon: daemonRouter,
  audit: auditRouter,
  overview: overviewRouter,
  account: accountRouter,
  operators: operatorsRouter,
  invitations: invitationsRouter,
  approvalRules: approvalRulesRouter,
  expectedMachines: expectedMachinesRouter,
  webhooks: webhooksRouter,
  pki: pkiRouter,
  provisioning: provisioningRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
