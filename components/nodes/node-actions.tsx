'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import type { Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import type { NodeDetail } from '@/protocol/api/node-schemas';

type Kind = 'adopt' | 'recheck' | 'cordon' | 'uncordon' | 'revokeIdentity' | 'delete';

const COPY: Record<Kind, { label: string; title: string; body: string; pending: string; tone: 'danger' | 'primary' }> = {
  adopt: {
    label: 'Adopt',
    title: 'Adopt node',
    body: 'The node leaves acceptance and takes work as adopted. Do this once its acceptance checks passed.',
    pending: 'Adopting…',
    tone: 'primary',
  },
  recheck: {
    label: 'Re-run checks',
    title: 'Re-run acceptance checks',
    body: "The pool's acceptance checks run again on the machine (now if it is connected, else when it connects); a pass adopts it.",
    pending: 'Asking…',
    tone: 'primary',
  },
  cordon: {
    label: 'Cordon',
    title: 'Cordon node',
    body: 'The node takes no new work; what runs on it keeps running. Uncordon undoes it.',
    pending: 'Cordoning…',
    tone: 'primary',
  },
  uncordon: { label: 'Uncordon', title: 'Uncordon node', body: 'The node takes new work again.', pending: 'Uncordoning…', tone: 'primary' },
  revokeIdentity: {
    label: 'Revoke identity',
    title: 'Revoke node identity',
    body: 'Every certificate of the node is revoked at once: it stops renewing and must join again with a new token. This cannot be undone.',
    pending: 'Revoking…',
    tone: 'danger',
  },
  delete: {
    label: 'Delete',
    title: 'Delete node',
    body: 'The node is retired and its hardware key freed; the machine renews no more. This cannot be undone.',
    pending: 'Deleting…',
    tone: 'danger',
  },
};

/**
 * The lifecycle actions the node's state allows (a delete needs a cordon first), each behind a
 * confirmation; none for a role that may not manage nodes (the server refuses them anyway).
 */
export function NodeActions({ node, tenant }: { node: NodeDetail; tenant: Tenant }) {
  if (!can(tenant, 'compute:nodes:manage') || node.state === 'retired') return null;
  const kinds: Kind[] = [
    ...(node.state === 'adopting' ? (['adopt', 'recheck'] as Kind[]) : []),
    node.cordoned ? 'uncordon' : 'cordon',
    ...(node.certificate ? (['revokeIdentity'] as Kind[]) : []),
    ...(node.cordoned ? (['delete'] as Kind[]) : []),
  ];
  return (
    <div className="node-actions">
      {kinds.map((kind) => (
        <NodeAction key={kind} kind={kind} node={node} tenant={tenant} />
      ))}
      {!node.cordoned && <span className="muted">Cordon the node to delete it.</span>}
    </div>
  );
}

function NodeAction({ kind, node, tenant }: { kind: Kind; node: NodeDetail; tenant: Tenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const router = useRouter();
  const copy = COPY[kind];
  const options = {
    onSuccess: () => {
      void queryClient.invalidateQueries(trpc.nodes.pathFilter());
      void queryClient.invalidateQueries(trpc.events.list.pathFilter());
      if (kind === 'delete') router.push(withTenant(`/nodes?pool=${node.poolId ?? ''}`, tenant.id));
    },
  };
  const mutations = {
    adopt: useMutation(trpc.nodes.adopt.mutationOptions(options)),
    recheck: useMutation(trpc.nodes.recheck.mutationOptions(options)),
    cordon: useMutation(trpc.nodes.cordon.mutationOptions(options)),
    uncordon: useMutation(trpc.nodes.uncordon.mutationOptions(options)),
    revokeIdentity: useMutation(trpc.nodes.revokeIdentity.mutationOptions(options)),
    delete: useMutation(trpc.nodes.delete.mutationOptions(options)),
  };
  const mutation = mutations[kind];
  return (
    <ConfirmButton
      label={copy.label}
      ariaLabel={`${copy.label} node ${node.id}`}
      title={copy.title}
      confirmLabel={copy.label}
      pendingLabel={copy.pending}
      tone={copy.tone}
      mutation={mutation}
      errorMessage={(error) => toApiError(error).message}
      onConfirm={(close) => mutation.mutate({ tenantId: tenant.id, nodeId: node.id }, { onSuccess: close })}
    >
      <p>
        {copy.body} Node <code>{node.id}</code>.
      </p>
    </ConfirmButton>
  );
}
