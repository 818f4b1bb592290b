import { BASE_PATH } from '../server/config/config';
import { DomainError } from '../protocol/errors';
import { isDomainCode } from './errors';
import { readServerSentEvents } from './sse';
import {
  API,
  pathFits,
  SUBSCRIPTIONS,
  type Answer,
  type GetProcedure,
  type PostProcedure,
  type Procedure,
  type Subscription,
  type SubscriptionEvent,
} from './api';
import { parseAnswer } from './answer';

interface RemoteOptions {
  server?: string;
  apiKey?: string;
  /** The command line's command (`join-tokens list`), named in an error about a malformed answer. */
  command?: string;
}

/** A REST query: a list is sent as the parameter repeated (`labels=a=1&labels=b=2`). */
type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

function queryString(query: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (Array.isArray(v)) for (const item of v) params.append(k, item);
    else if (v !== undefined) params.set(k, String(v));
  }
  return params.toString();
}

/** Talks to a running server's REST API with an API key (flags win over BETTER_COMPUTE_URL / _API_KEY). */
export class ApiClient {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly command: string;

  constructor(options: RemoteOptions) {
    const server = options.server ?? process.env.BETTER_COMPUTE_URL;
    const apiKey = options.apiKey ?? process.env.BETTER_COMPUTE_API_KEY;
    if (!server)
      throw new DomainError('INVALID_ARGUMENT', 'Name the server with --server or BETTER_COMPUTE_URL (e.g. http://localhost:3000)');
    if (!apiKey) throw new DomainError('INVALID_ARGUMENT', 'Pass an API key with --api-key or BETTER_COMPUTE_API_KEY');
    this.baseUrl = server.replace(/\/+$/, '') + BASE_PATH;
    this.apiKey = apiKey;
    this.command = options.command ?? 'better-compute';
  }

  /** GET a REST route of `procedure`; the answer is parsed with the procedure's output schema (cli/api.ts). */
  get<P extends GetProcedure>(procedure: P, path: string, query: Query = {}): Promise<Answer<P>> {
    return this.call(procedure, path, queryString(query));
  }

  /**
   * GET a streamed file (a CSV export) and write it to `out` as it arrives, never holding it whole. An error
   * answer (before the first byte) is the API's error model, thrown as for the other calls.
   */
  async download(path: string, query: Query, out: NodeJS.WritableStream): Promise<void> {
    const url = this.baseUrl + path + (Object.keys(query).length ? `?${queryString(query)}` : '');
    const response = await this.fetch(url, { headers: { authorization: `Bearer ${this.apiKey}` } });
    if (!response.ok || !response.body) {
      const text = await response.text();
      let error: { code?: string; message?: string; field?: string } | undefined;
      try {
        error = JSON.parse(text) as typeof error;
      } catch {
        error = undefined;
      }
      if (isDomainCode(error?.code)) throw new DomainError(error.code, error.message ?? error.code, { field: error.field });
      throw new Error(`The server answered ${response.status}: ${error?.message ?? text.slice(0, 200)}`);
    }
    const reader = response.body.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      if (!out.write(next.value)) await new Promise((resolve) => out.once('drain', resolve));
    }
  }

  private async fetch(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, init);
    } catch (error) {
      throw new Error(
        `Cannot reach ${this.baseUrl}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** POST to a REST route of `procedure`; the answer is parsed with the procedure's output schema (cli/api.ts). */
  post<P extends PostProcedure>(procedure: P, path: string, body: Record<string, unknown> = {}): Promise<Answer<P>> {
    return this.call(procedure, path, '', body);
  }

  private async call<P extends Procedure>(procedure: P, path: string, query: string, body?: Record<string, unknown>): Promise<Answer<P>> {
    const { method, path: template, output } = API[procedure];
    // A command's path that is not its procedure's route is a mistake in the CLI, caught before anything is sent.
    if (!pathFits(template, path)) throw new Error(`${this.command}: ${path} is not a path of ${procedure} (${template})`);
    const url = this.baseUrl + path + (query ? `?${query}` : '');
    const response = await this.fetch(url, {
      method,
      headers: { authorization: `Bearer ${this.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new Error(`The server answered ${response.status} with something that is not JSON`);
    }
    if (!response.ok) {
      const error = parsed as { code?: string; message?: string; field?: string } | undefined;
      if (isDomainCode(error?.code)) throw new DomainError(error.code, error.message ?? error.code, { field: error.field });
      throw new Error(`The server answered ${response.status}: ${error?.message ?? text.slice(0, 200)}`);
    }
    return parseAnswer(this.command, procedure, output, parsed) as Answer<P>;
  }

  /**
   * Follows a tRPC subscription over server-sent events (`/api/trpc/<path>`), yielding each event's data,
   * parsed with the subscription's event schema (cli/api.ts), until the server ends it or `signal` aborts.
   */
  async *subscribe<S extends Subscription>(procedure: S, input: unknown, signal?: AbortSignal): AsyncGenerator<SubscriptionEvent<S>> {
    const root = this.baseUrl.slice(0, this.baseUrl.length - BASE_PATH.length);
    const url = `${root}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`;
    // The server closes a stream at its lifetime cap (the caller is then decided afresh): subscribe again.
    for (;;) {
      const response = await fetch(url, { headers: { authorization: `Bearer ${this.apiKey}`, accept: 'text/event-stream' }, signal });
      if (!response.ok || !response.body) throw new Error(`The server answered ${response.status} to the subscription`);
      const events = readServerSentEvents(response.body);
      let next = await events.next();
      for (; !next.done; next = await events.next())
        yield parseAnswer(this.command, procedure, SUBSCRIPTIONS[procedure], next.value) as SubscriptionEvent<S>;
      if (next.value === 'return' || signal?.aborted) return;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  /**
   * Accepts a tenant id or name: names are looked up among the tenants the key can see. Without one, the
   * tenant is the API key's own: a key belongs to exactly one tenant and is allowed nothing outside it, so a
   * pool, site, node or key the command names by id can only be that tenant's (any other is NOT_FOUND).
   */
  async tenantId(ref?: string): Promise<string> {
    if (ref === undefined) return this.ownTenantId();
    if (ref.startsWith('tnt_')) return ref;
    const { items } = await this.get('tenants.list', '/v1/tenants');
    const tenant = items.find((t) => t.name === ref);
    if (!tenant) throw new DomainError('NOT_FOUND', `Tenant ${ref} not found`);
    return tenant.id;
  }

  private async ownTenantId(): Promise<string> {
    const { items } = await this.get('tenants.list', '/v1/tenants');
    const own = items.filter((t) => t.isMember);
    if (own.length !== 1) throw new DomainError('INVALID_ARGUMENT', 'Name the tenant with --tenant', { field: 'tenant' });
    return own[0]!.id;
  }
}

export const enc = encodeURIComponent;
