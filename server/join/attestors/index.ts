import { discoveryAttestor } from './discovery';
import { joinTokenAttestor } from './join-token';
import type { Attestor } from './types';

/** The attestors this server runs, by the name a join carries. `tpm` and `x509pop` are refused by name. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each attestor has its own state type
export const ATTESTORS: ReadonlyMap<string, Attestor<any>> = new Map<string, Attestor<any>>([
  [joinTokenAttestor.name, joinTokenAttestor],
  [discoveryAttestor.name, discoveryAttestor],
]);
