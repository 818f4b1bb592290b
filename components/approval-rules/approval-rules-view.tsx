'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { DataList } from '@/components/ui/data-table';
import { toApiError } from '@/lib/api-errors';
import type { Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { INITIAL_RULE_VALUES, toRuleInput, toRuleValues } from '@/lib/approval-rule-form';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import { SitePicker, useSiteParam } from '@/components/sites/site-picker';
import type { RuleRecord } from '@/server/rules/schemas';
import { RuleForm } from './rule-form';
import { ruleColumns } from './rule-columns';

export function ApprovalRulesView() {
  return <TenantGate>{(tenant) => <TenantApprovalRules key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** A site's ordered approval rules (`?site=`): the first enabled rule in force that matches decides a discovery join. */
function TenantApprovalRules({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const { sites, pools, siteId, setSiteId } = useSiteParam(tenant);
  const scope = siteId ? { tenantId: tenant.id, siteId } : null;
  const rules = useQuery({
    ...trpc.approvalRules.list.queryOptions(scope ?? { tenantId: tenant.id, siteId: 'site_0' }),
    enabled: scope !== null,
  });
  const [editing, setEditing] = useState<RuleRecord | 'new' | null>(null);
  const poolNames = new Map(pools.data?.items.map((p) => [p.id, p.name]));
  const refresh = () => queryClient.invalidateQueries(trpc.approvalRules.list.pathFilter());

  const move = useMutation({
    mutationFn: (v: { ruleId: string; position: number }) => client.approvalRules.move.mutate({ ...scope!, ...v }),
    onSettled: refresh,
  });
  const toggle = useMutation({
    mutationFn: (rule: RuleRecord) =>
      client.approvalRules.update.mutate({ ...scope!, ruleId: rule.id, ...toRuleInput({ ...toRuleValues(rule), enabled: !rule.enabled }) }),
    onSettled: refresh,
  });
  const remove = useMutation({
    mutationFn: (ruleId: string) => client.approvalRules.delete.mutate({ ...scope!, ruleId }),
    onSettled: refresh,
  });
  const actionError = move.error ?? toggle.error;
  // Rules are site settings: only a role that manages sites is offered to change them.
  const canManage = can(tenant, 'compute:sites:manage');
  const items = rules.data?.items ?? [];

  return (
    <>
      <PageHeader
        title="Approval rules"
        description={
          <>
            Per site, in order: the first enabled rule that matches a PXE machine&apos;s join decides it at once (approve into a pool,
            reject, or leave it for a person). Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            <SitePicker
              sites={sites.data?.items}
              value={siteId}
              onChange={(site) => {
                setEditing(null);
                setSiteId(site);
              }}
            />
            {canManage && (
              <button type="button" className="btn btn-primary" disabled={!scope} onClick={() => setEditing('new')}>
                New rule
              </button>
            )}
          </>
        }
      />
      {actionError && (
        <p className="form-error" role="alert">
          {toApiError(actionError).message}
        </p>
      )}
      {scope && editing && canManage && (
        <RuleForm
          key={editing === 'new' ? 'new' : editing.id}
          scope={scope}
          pools={pools.data?.items ?? []}
          initial={editing === 'new' ? INITIAL_RULE_VALUES : toRuleValues(editing)}
          ruleId={editing === 'new' ? undefined : editing.id}
          initialLabels={editing === 'new' ? {} : editing.labels}
          onDone={() => setEditing(null)}
        />
      )}
      <DataList
        query={rules}
        rows={items}
        loading="Loading rules…"
        what="approval rules"
        empty="This site has no approval rules: every PXE machine waits for a person (or an expected-machines import)."
        panel="Rules"
        label="Rules, in order"
        rowKey={(rule) => rule.id}
        columns={ruleColumns(poolNames, canManage ? { rules: items, move, toggle, remove, onEdit: setEditing } : null)}
      />
    </>
  );
}
