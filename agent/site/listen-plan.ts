import { isIP } from 'node:net';
import { UsageError } from '../bcd/join-setup';

/** The host of `host:port`, `[v6]:port` or `:port` (empty: every address). */
function hostOf(address: string): string {
  const bracketed = /^\[([^\]]*)\]:\d+$/.exec(address);
  if (bracketed) return bracketed[1]!;
  const i = address.lastIndexOf(':');
  return i < 0 ? address : address.slice(0, i);
}

/** Whether a listener bound to `address` is reachable from the loopback interface only. */
export function isLoopbackListener(address: string): boolean {
  const host = hostOf(address).toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/**
 * Where `bcd site` listens: leases (`--lease-listen`, loopback unless given) and the ramdisks' token fetches
 * (`--boot-listen`, the lease address unless given). A lease names the MAC and ip a token is handed to, so whoever
 * can announce leases can have any machine's token sent to an address of theirs: one socket that the ramdisks'
 * network reaches must never take leases too. A lease listener off loopback must be reachable by the DHCP server
 * only (a firewall's job; the operator guide says so), and the ramdisks then fetch on another address.
 */
export function listenPlan(leaseListen: string | undefined, bootListen: string | undefined): { lease: string; boot: string } {
  const lease = leaseListen ?? '127.0.0.1:8470';
  const boot = bootListen ?? lease;
  if (boot === lease && !isLoopbackListener(lease))
    throw new UsageError(
      `--lease-listen ${lease} is not a loopback address, so the ramdisks' network could announce leases: ` +
        'serve the ramdisks on another address with --boot-listen, and let only the DHCP server reach the lease listener',
    );
  return { lease, boot };
}
