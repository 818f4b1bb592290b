import { type RestRoute } from './route-table';
import { TENANT_ROUTES } from './tenant-routes';
import { NODE_ROUTES } from './node-routes';
import { SITE_ROUTES } from './site-routes';
import { JOIN_ROUTES } from './join-routes';
import { ADMIN_ROUTES } from './admin-routes';

/** Every REST route, in the order they are matched and documented (the OpenAPI document lists paths in it). */
export const REST_ROUTES: readonly RestRoute[] = [...TENANT_ROUTES, ...NODE_ROUTES, ...SITE_ROUTES, ...JOIN_ROUTES, ...ADMIN_ROUTES];

/** The status of a success: 201 for a POST that creates, else 200. */
export function successStatus(route: RestRoute): 200 | 201 {
  return route.method === 'POST' && route.procedure.endsWith('.create') ? 201 : 200;
}

interface RouteMatch {
  route: RestRoute;
  params: Record<string, string>;
}

const compiled = REST_ROUTES.map((route) => {
  const names: string[] = [];
  const pattern = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { route, names, regex: new RegExp(`^${pattern}$`) };
});

/** Finds the route for a method and a path relative to the base path; `allowed` lists methods on a path miss. */
export function matchRoute(method: string, path: string): RouteMatch | { allowed: string[] } | null {
  const allowed: string[] = [];
  for (const { route, names, regex } of compiled) {
    const m = regex.exec(path);
    if (!m) continue;
    if (route.method !== method) {
      allowed.push(route.method);
      continue;
    }
    const params = Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
    return { route, params };
  }
  return allowed.length ? { allowed } : null;
}
