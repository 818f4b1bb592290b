/** What a discovery token's boot step saw, kept on the token row and copied onto its join request. */
export interface DiscoveryBootInfo {
  ip?: string | null;
  workflowId?: string | null;
  vouchedBy?: string | null;
  bootLeaseEpoch?: number | null;
}
