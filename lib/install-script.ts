import { installScriptInput } from '@/protocol/api/daemon-schemas';

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

type InstallScriptField = 'gatewayUrl' | 'baseUrl';
export type InstallScriptFieldErrors = Partial<Record<InstallScriptField, string>>;

/**
 * Both URL fields' problems at once, checked with the server's own input schema before the call (the server
 * stops at its first issue), so the dialog shows them in its own style rather than a browser bubble.
 */
export function validateInstallScriptForm(input: {
  tenantId: string;
  poolId: string;
  gatewayUrl: string;
  baseUrl: string;
}): InstallScriptFieldErrors {
  const errors: InstallScriptFieldErrors = {};
  for (const field of ['gatewayUrl', 'baseUrl'] as const) if (!input[field]) errors[field] = 'Enter a URL, e.g. https://host:8443';
  const result = installScriptInput.safeParse(input);
  for (const issue of result.success ? [] : result.error.issues) {
    const field = issue.path[0];
    if ((field === 'gatewayUrl' || field === 'baseUrl') && !errors[field])
      errors[field] = issue.message === 'Invalid URL' ? 'Not a URL: give an http(s) origin' : issue.message;
  }
  return errors;
}
