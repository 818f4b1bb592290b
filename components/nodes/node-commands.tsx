'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { DataTable, type DataColumn } from '@/components/ui/data-table';
import { nodeCommandsInput } from '@/lib/console-page-inputs';
import { LocalTime } from '@/components/ui/time';
import { QueryError } from '@/components/ui/query-state';
import { toApiError } from '@/lib/api-errors';
import { can } from '@/lib/can';
import type { Tenant } from '@/lib/api-types';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import type { CommandKind } from '@/protocol/command-wire';
import type { CommandRecord, CommandState } from '@/protocol/api/command-schemas';

const BADGE: Record<CommandState, string> = {
  queued: 'badge badge-info',
  sent: 'badge badge-info',
  succeeded: 'badge badge-success',
  failed: 'badge badge-danger',
  rejected: 'badge badge-warn',
  expired: 'badge badge-muted',
};

/** Every kind of protocol 1 (the type makes this list complete), with what it does. */
const KIND_HINT: Record<CommandKind, string> = {
  'bcd.doctor': 'bcd doctor: checks the agent, its identity and the gateway',
  'bcd.renew': 'renew the certificate now, on the session',
  'trust.refresh': 'open a new session, so the current trust set is delivered',
};
const KINDS = Object.keys(KIND_HINT) as CommandKind[];

/** While a command is queued or sent, the list is read again this often. */
const OPEN_REFRESH_MS = 2_000;

/**
 * The node page's Commands section: a "Run command" control (the kinds of protocol 1; for roles that manage
 * nodes, on a node that is not retired) and the node's commands, newest first, with their state, times and the
 * result the node posted, as formatted JSON.
 */
export function NodeCommands({ tenant, nodeId, retired }: { tenant: Tenant; nodeId: string; retired: boolean }) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [kind, setKind] = useState<CommandKind>(KINDS[0]!);
  // The input the page's server render read with (lib/console-page-inputs.ts), so the first view has the list.
  const input = nodeCommandsInput(tenant.id, nodeId);
  const list = useQuery({
    ...trpc.commands.list.queryOptions(input),
    refetchInterval: (query) => (query.state.data?.items.some((c) => c.state === 'queued' || c.state === 'sent') ? OPEN_REFRESH_MS : false),
  });
  const run = useMutation({
    mutationKey: trpc.commands.enqueue.mutationKey(),
    mutationFn: (k: string) => client.commands.enqueue.mutate({ tenantId: tenant.id, nodeId, kind: k }),
    onSuccess: () => queryClient.invalidateQueries(trpc.commands.list.pathFilter()),
  });
  const apiError = run.error ? toApiError(run.error) : null;
  const editable = can(tenant, 'compute:nodes:manage') && !retired;

  function onRun(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    run.mutate(kind);
  }

  return (
    <section className="panel" aria-labelledby="node-commands">
      <header className="panel-header">
        <h2 id="node-commands">Commands</h2>
        <span className="muted">sent on the node’s session, signed by the control plane</span>
      </header>
      {editable && (
        <form
          className="panel-body"
          onSubmit={onRun}
          aria-busy={run.isPending}
          style={{ display: 'flex', flexWrap: 'wrap', gap: 8, alignItems: 'flex-end' }}
        >
          <div style={{ display: 'grid', gap: 2, minWidth: 0 }}>
            <label className="field-label" htmlFor="node-command-kind">
              Command
            </label>
            <select
              id="node-command-kind"
              value={kind}
              onChange={(e) => setKind(e.target.value as CommandKind)}
              aria-describedby="node-command-hint"
            >
              {KINDS.map((k) => (
                <option key={k} value={k}>
                  {k}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" className="btn btn-small" disabled={run.isPending}>
            {run.isPending ? 'Queuing…' : 'Run command'}
          </button>
          <span id="node-command-hint" className="muted" style={{ flexBasis: '100%' }}>
            {KIND_HINT[kind]}
          </span>
          {apiError && (
            <p className="form-error" role="alert" style={{ flexBasis: '100%' }}>
              {apiError.message}
            </p>
          )}
        </form>
      )}
      {list.isPending ? (
        <p className="panel-empty">Loading commands…</p>
      ) : list.isError ? (
        <QueryError error={list.error} what="commands" onRetry={() => void list.refetch()} />
      ) : list.data.items.length === 0 ? (
        <p className="panel-empty">No command was sent to this node.</p>
      ) : (
        <CommandTable commands={list.data.items} />
      )}
    </section>
  );
}

function CommandResult({ output }: { output: CommandRecord['output'] }) {
  if (!output) return <span className="muted">none</span>;
  return (
    <details>
      <summary>Result</summary>
      <pre className="input-mono" style={{ maxHeight: 320, overflow: 'auto', whiteSpace: 'pre-wrap' }}>
        {JSON.stringify(output, null, 2)}
      </pre>
    </details>
  );
}

const COMMAND_COLUMNS: DataColumn<CommandRecord>[] = [
  {
    id: 'command',
    header: 'Command',
    rowHeader: true,
    cell: (c) => (
      <>
        {c.kind}
        <span className="cell-sub">
          <code>{c.id}</code>
        </span>
      </>
    ),
  },
  {
    id: 'state',
    header: 'State',
    cell: (c) => (
      <>
        <span className={BADGE[c.state]}>{c.state}</span>
        {c.reason && <span className="cell-sub">{c.reason}</span>}
      </>
    ),
  },
  {
    id: 'queued',
    header: 'Queued',
    className: 'cell-time',
    cell: (c) => (
      <>
        <LocalTime iso={c.createdAt} />
        <span className="cell-sub">by {c.createdBy}</span>
      </>
    ),
  },
  {
    id: 'sent',
    header: 'Sent',
    className: 'cell-time',
    cell: (c) => (c.sentAt ? <LocalTime iso={c.sentAt} /> : <span className="muted">not yet</span>),
  },
  {
    id: 'finished',
    header: 'Finished',
    className: 'cell-time',
    cell: (c) => (c.finishedAt ? <LocalTime iso={c.finishedAt} /> : <span className="muted">—</span>),
  },
  { id: 'result', header: 'Result', cell: (c) => <CommandResult output={c.output} /> },
];

function CommandTable({ commands }: { commands: CommandRecord[] }) {
  return <DataTable rows={commands} columns={COMMAND_COLUMNS} rowKey={(c) => c.id} label="Commands" />;
}
