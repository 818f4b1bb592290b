export type Tool = { name: string; pkg: string; why: string };
export const TOOLS: Tool[];
export const DEFAULT_CHROMIUM: string;
export function which(name: string, env: NodeJS.ProcessEnv): string | undefined;
export function missingTools(env: NodeJS.ProcessEnv, options?: { chromium?: string }): Tool[];
export function checkTools(options?: {
  env?: NodeJS.ProcessEnv;
  uid?: number;
  chromium?: string;
  run?: (command: string, args: string[], env: NodeJS.ProcessEnv) => number;
  say?: (line: string) => void;
  fail?: (line: string) => void;
}): number;
