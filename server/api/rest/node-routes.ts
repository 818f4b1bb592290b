import { restRoutes, T } from './route-table';

/** A tenant's nodes and the commands sent to them. */
export const NODE_ROUTES = restRoutes([
  {
    method: 'GET',
    path: `${T}/nodes`,
    procedure: 'nodes.list',
    summary: "List a tenant's nodes: search and filters as query parameters (labels repeated), exact total, paged",
  },
  {
    method: 'GET',
    path: `${T}/nodes/{nodeId}`,
    procedure: 'nodes.get',
    summary: 'Get a node: state, trust, identity, current certificate and certificate history, conditions',
  },
  {
    method: 'POST',
    path: `${T}/nodes/bulk`,
    procedure: 'nodes.bulk',
    summary: 'Cordon, uncordon, revoke or label the named nodes, or a page of the nodes a filter selects',
  },
  { method: 'POST', path: `${T}/nodes/{nodeId}/adopt`, procedure: 'nodes.adopt', summary: 'Adopt a node that is still adopting' },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/recheck`,
    procedure: 'nodes.recheck',
    summary: "Run the pool's acceptance checks on an adopting node again (a pass adopts it)",
  },
  { method: 'POST', path: `${T}/nodes/{nodeId}/cordon`, procedure: 'nodes.cordon', summary: 'Cordon a node' },
  { method: 'POST', path: `${T}/nodes/{nodeId}/uncordon`, procedure: 'nodes.uncordon', summary: 'Uncordon a node' },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/labels`,
    procedure: 'nodes.setLabels',
    summary: "Set, override or remove a node's labels (set, remove, replace)",
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/revoke-identity`,
    procedure: 'nodes.revokeIdentity',
    summary: 'Revoke every certificate of a node (it must join again)',
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/delete`,
    procedure: 'nodes.delete',
    summary: 'Delete a cordoned node (frees its hardware key and MACs)',
  },
  { method: 'GET', path: `${T}/nodes/{nodeId}/commands`, procedure: 'commands.list', summary: "A node's commands, newest first, paged" },
  {
    method: 'POST',
    path: `${T}/commands`,
    procedure: 'commands.enqueue',
    summary: 'Queue a command to one node (`nodeId`), or to every node a filter or pool selects (`matching`: a batch with progress)',
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/commands`,
    procedure: 'commands.enqueue',
    summary: 'Queue a command (bcd.doctor, bcd.renew, trust.refresh) to a node; sent on its session',
  },
  { method: 'GET', path: `${T}/commands/{commandId}`, procedure: 'commands.get', summary: 'Get a command: state, times, result' },
  {
    method: 'GET',
    path: `${T}/command-batches/{batchId}`,
    procedure: 'commands.batch',
    summary: "A batch's progress: its commands counted by state",
  },
]);
