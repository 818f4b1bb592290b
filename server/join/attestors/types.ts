import type pg from 'pg';
import type { Admission, ExistingNode, LockedToken, Refusal } from '../decide';
import type { PreparedJoin } from '../prepare';

/** What an attestor decided for one join, against the rows the admission transaction locked. */
export type AttestorVerdict = Admission | Refusal | Deferral;

/**
 * The machine must wait for an operator: a join request was recorded or refreshed (written by the
 * admission transaction with `write`), and the agent gets the signed `pending` answer. Nothing is issued
 * and no token is spent.
 */
export interface Deferral {
  admitted: false;
  deferred: true;
  requestId: string;
  tenantId: string;
}

export const isDeferral = (v: AttestorVerdict): v is Deferral => 'deferred' in v;

/** What every attestor is given for one join of a batch. */
export interface AttestorInput {
  join: PreparedJoin;
  token: LockedToken | undefined;
  /** The node the join's trusted hardware key belongs to (locked), unless the join raced it. */
  existing: ExistingNode | undefined;
  rootTenantId: string | null;
}

/**
 * One attestor (joining.md "The join flow", step 4, and the attestors of attestation.md). `decide` is
 * pure over the batch's locked rows and the attestor's own batch state; the transaction applies an
 * admission (spending one use of the token) and asks the attestor to `write` what else it decided.
 *
 * An attestor that needs rows of its own reads and locks them in `load`, which the transaction calls only
 * when the batch holds a join naming it, so the `join-token` path pays no extra round trip.
 */
export interface Attestor<State = unknown> {
  readonly name: string;
  load(client: pg.PoolClient, joins: PreparedJoin[], tokens: ReadonlyMap<string, LockedToken>): Promise<State>;
  decide(input: AttestorInput, state: State): AttestorVerdict;
  /**
   * Writes the batch's deferrals and the consumptions of its admissions (after `decide` ran for every join);
   * `admitted` maps each admitted join to the node id it gets.
   */
  write(client: pg.PoolClient, state: State, admitted: ReadonlyMap<PreparedJoin, string>): Promise<boolean>;
}
