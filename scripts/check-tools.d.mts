export type Tool = { name: string; pkg: string; why: string; path?: string };
export const TOOLS: Tool[];
export const DEFAULT_CHROMIUM: string;
export function which(name: string, env: Record<string, string | undefined>): string | undefined;
export function missingTools(env: Record<string, string | undefined>, options?: { chromium?: string }): Tool[];
export function checkTools(options?: {
  env?: Record<string, string | undefined>;
  uid?: number;
  chromium?: string;
  run?: (command: string, args: string[], env: Record<string, string | undefined>) => number;
  say?: (line: string) => void;
  fail?: (line: string) => void;
}): number;
