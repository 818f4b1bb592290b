/** What each token role's agent is certified as: a provisioned OS joins as a node, a PXE ramdisk as `ramdisk`. */
export const CERT_ROLE_OF_TOKEN: Record<string, string> = { node: 'node', site: 'site', provisioned: 'node', discovery: 'ramdisk' };
