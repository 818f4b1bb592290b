// Set by scripts/build-bcd.mjs (esbuild `define`); absent when the agent runs from source under tsx.
declare const BCD_VERSION: string | undefined;

/** bcd's version: the product version it was built from. */
export const bcdVersion = (): string =>
  typeof BCD_VERSION === 'string' ? BCD_VERSION : `${process.env.npm_package_version ?? '0.0.0'}-source`;

/** The `uname -m` name of this machine in the download names (`amd64`, `arm64`). */
const bcdArch = (): string => ({ x64: 'amd64', arm64: 'arm64' })[process.arch as string] ?? process.arch;

export function versionLine(): string {
  return `bcd ${bcdVersion()} linux-${bcdArch()} (node ${process.versions.node})`;
}
