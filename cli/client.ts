import { BASE_PATH } from '../server/config/config';
import { DomainError } from '../protocol/errors';
import { isDomainCode } from './errors';
import { readServerSentEvents } from './sse';

export interface RemoteOptions {
  server?: string;
  apiKey?: string;
}

/** Talks to a running server's REST API with an API key (flags win over BETTER_COMPUTE_URL / _API_KEY). */
export class ApiClient {
  readonly baseUrl: string;
  private readonly apiKey: string;

  constructor(options: RemoteOptions) {
    const server = options.server ?? process.env.BETTER_COMPUTE_URL;
    const apiKey = options.apiKey ?? process.env.BETTER_COMPUTE_API_KEY;
    if (!server)
      throw new DomainError('INVALID_ARGUMENT', 'Name the server with --server or BETTER_COMPUTE_URL (e.g. http://localhost:3000)');
    if (!apiKey) throw new DomainError('INVALID_ARGUMENT', 'Pass an API key with --api-key or BETTER_COMPUTE_API_KEY');
    this.baseUrl = server.replace(/\/+$/, '') + BASE_PATH;
    this.apiKey = apiKey;
  }

  async request<T>(method: 'GET' | 'POST', path: string, body?: Record<string, unknown>): Promise<T> {
    let response: Response;
    try {
      response = await fetch(this.baseUrl + path, {
        method,
        headers: { authorization: `Bearer ${this.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    } catch (error) {
      throw new Error(
        `Cannot reach ${this.baseUrl}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`,
        { cause: error },
      );
    }
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
    return parsed as T;
  }

  get<T>(path: string, query: Record<string, string | number | boolean | undefined> = {}): Promise<T> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return this.request<T>('GET', qs ? `${path}?${qs}` : path);
  }

  post<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  /**
   * Follows a tRPC subscription over server-sent events (`/api/trpc/<path>`), yielding each event's data
   * until the server ends it or `signal` aborts.
   */
  async *subscribe<T>(procedure: string, input: unknown, signal?: AbortSignal): AsyncGenerator<T> {
    const root = this.baseUrl.slice(0, this.baseUrl.length - BASE_PATH.length);
    const url = `${root}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`;
    // The server closes a stream at its lifetime cap (the caller is then decided afresh): subscribe again.
    for (;;) {
      const response = await fetch(url, { headers: { authorization: `Bearer ${this.apiKey}`, accept: 'text/event-stream' }, signal });
      if (!response.ok || !response.body) throw new Error(`The server answered ${response.status} to the subscription`);
      if ((yield* readServerSentEvents<T>(response.body)) === 'return' || signal?.aborted) return;
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
    const { items } = await this.get<{ items: { id: string; name: string }[] }>('/v1/tenants');
    const tenant = items.find((t) => t.name === ref);
    if (!tenant) throw new DomainError('NOT_FOUND', `Tenant ${ref} not found`);
    return tenant.id;
  }

  private async ownTenantId(): Promise<string> {
    const { items } = await this.get<{ items: { id: string; isMember: boolean }[] }>('/v1/tenants');
    const own = items.filter((t) => t.isMember);
    if (own.length !== 1) throw new DomainError('INVALID_ARGUMENT', 'Name the tenant with --tenant', { field: 'tenant' });
    return own[0]!.id;
  }
}

export const enc = encodeURIComponent;
