/**
 * The defaults of the install-script dialog: the gateway the well-known document publishes, and the
 * console's own origin as the base the script downloads bcd from. Only origins: the server refuses paths.
 */
export function installScriptDefaults(wellKnown: unknown, consoleOrigin: string): { gatewayUrl: string; baseUrl: string } {
  const gateway = (wellKnown as { gateway?: { url?: unknown } } | null)?.gateway;
  return { gatewayUrl: typeof gateway?.url === 'string' ? originOf(gateway.url) : '', baseUrl: originOf(consoleOrigin) };
}

/** `https://gw.example:8443/x` → `https://gw.example:8443`; a value that is no URL is kept for the form to flag. */
export function originOf(value: string): string {
  try {
    return new URL(value).origin;
  } catch {
    return value;
  }
}
