import { restRoutes, T } from './route-table';

/** Bringing machines in: a pool's join requests, a node's user data, a pool's install script. */
export const JOIN_ROUTES = restRoutes([
  {
    method: 'GET',
    path: `${T}/pools/{poolId}/join-requests`,
    procedure: 'joinRequests.list',
    summary: "List a pool's join requests (pending by default)",
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/approve`,
    procedure: 'joinRequests.approveMany',
    summary: 'Approve a page of join requests',
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/reject`,
    procedure: 'joinRequests.rejectMany',
    summary: 'Reject a page of join requests',
  },
  { method: 'GET', path: `${T}/pools/{poolId}/join-requests/{requestId}`, procedure: 'joinRequests.get', summary: 'Get a join request' },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/{requestId}/approve`,
    procedure: 'joinRequests.approve',
    summary: 'Approve a join request',
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/{requestId}/reject`,
    procedure: 'joinRequests.reject',
    summary: 'Reject a join request',
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/user-data`,
    procedure: 'provisioning.userData',
    summary: 'Cloud-init user data that joins a deployed machine back as this node (holds a single-use token)',
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/install-script`,
    procedure: 'daemon.installScript',
    summary: "Generate a pool's bcd install script (holds no secret)",
  },
]);
