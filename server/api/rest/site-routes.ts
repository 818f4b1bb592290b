import { restRoutes, T } from './route-table';

/** A site's settings, tokens, approval rules and expected machines. */
export const SITE_ROUTES = restRoutes([
  { method: 'POST', path: `${T}/sites/{siteId}/update`, procedure: 'sites.update', summary: "Update a site's discovery and TPM settings" },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/discovery-tokens`,
    procedure: 'discoveryTokens.create',
    summary: 'Create a discovery token for one PXE lease (shown once)',
  },
  { method: 'POST', path: `${T}/sites/{siteId}/site-tokens`, procedure: 'siteTokens.create', summary: 'Create a site token (shown once)' },
  {
    method: 'GET',
    path: `${T}/sites/{siteId}/approval-rules`,
    procedure: 'approvalRules.list',
    summary: "List a site's approval rules, in the order they decide",
  },
  { method: 'POST', path: `${T}/sites/{siteId}/approval-rules`, procedure: 'approvalRules.create', summary: 'Append an approval rule' },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/dry-run`,
    procedure: 'approvalRules.dryRun',
    summary: 'What a draft rule would decide among recent requests (saves nothing)',
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/{ruleId}/update`,
    procedure: 'approvalRules.update',
    summary: 'Replace an approval rule',
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/{ruleId}/move`,
    procedure: 'approvalRules.move',
    summary: 'Move an approval rule to a position',
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/{ruleId}/delete`,
    procedure: 'approvalRules.delete',
    summary: 'Delete an approval rule',
  },
  {
    method: 'GET',
    path: `${T}/sites/{siteId}/expected-machines`,
    procedure: 'expectedMachines.list',
    summary: "List a site's expected machines (waiting by default)",
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/expected-machines/import`,
    procedure: 'expectedMachines.import',
    summary: 'Import expected machines from CSV or JSON (or preview)',
    maxBodyBytes: 4 * 1024 * 1024,
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/expected-machines/delete`,
    procedure: 'expectedMachines.delete',
    summary: 'Delete expected machines that have not arrived',
  },
  {
    method: 'GET',
    path: `${T}/sites/{siteId}/expected-machines/unmatched`,
    procedure: 'expectedMachines.unmatched',
    summary: 'Discovery arrivals of the last 7 days that no expected machine admitted',
  },
]);
