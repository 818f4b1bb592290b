// oidc-provider ships JavaScript only; test/oidc-provider.ts types what it uses.
declare module 'oidc-provider' {
  export const Provider: new (issuer: string, configuration: Record<string, unknown>) => unknown;
}
