export function walkTestFiles(dir?: string, rel?: string): string[];
export function tierProblems(files: string[], runs: { project: string; file: string }[]): string[];
export function vitestRuns(): Promise<{ project: string; file: string }[]>;
