import { execFileSync, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';

/** Where `ip` is: the commands run in a namespace get a PATH of their own, which may not hold /usr/sbin. */
const IP = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].find((file) => existsSync(file)) ?? 'ip';
/**
 * Whether this process can make network namespaces (`ip netns`, as root): the gateway-only network tests need
 * them, since only a namespace truly keeps a machine from reaching the API's address.
 */
export function canMakeNetworkNamespaces(): boolean {
  if (process.getuid?.() !== 0) return false;
  const probe = `bcprobe${process.pid}`;
  if (spawnSync(IP, ['netns', 'add', probe]).status !== 0) return false;
  spawnSync(IP, ['netns', 'del', probe]);
  return true;
}

/**
 * Two network namespaces beside this one (the host, where the API and PostgreSQL listen):
 *
 *     host (API)  hostAddress ── gatewayUpAddress  [gateway ns]  gatewayAddress ── machineAddress  [machine ns]
 *
 * The gateway's namespace reaches the host over one veth pair and the machine over another, and forwards
 * nothing (ip_forward 0), so the machine's namespace reaches exactly the gateway's address: not the host, not
 * the API on any of its addresses (its own 127.0.0.1 is its own loopback).
 */
export interface GatewayOnlyNetwork {
  gatewayNs: string;
  machineNs: string;
  /** The host's end of the host–gateway link: where the gateway reaches the API. */
  hostAddress: string;
  /** The gateway's end of the host–gateway link. */
  gatewayUpAddress: string;
  /** The gateway's end of the gateway–machine link: the one address the machine reaches. */
  gatewayAddress: string;
  machineAddress: string;
  /** `argv` run in namespace `ns` (`ip netns exec`, which execs it in place). */
  argv(ns: string, command: string, args: string[]): [string, string[]];
  remove(): void;
}

const ip = (...args: string[]) => execFileSync(IP, args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** Makes the two namespaces and links of {@link GatewayOnlyNetwork} (removed again if a step fails). */
export function makeGatewayOnlyNetwork(): GatewayOnlyNetwork {
  const tag = `${process.pid.toString(36)}${randomInt(36 ** 3).toString(36)}`;
  const gatewayNs = `bcgw-${tag}`;
  const machineNs = `bcm-${tag}`;
  const [up, upPeer, down, downPeer] = ['hg', 'gh', 'gm', 'mg'].map((side) => `${side}${tag}`.slice(0, 15));
  const subnet = `10.${randomInt(100, 200)}.${randomInt(256)}`;
  const net: GatewayOnlyNetwork = {
    gatewayNs,
    machineNs,
    hostAddress: `${subnet}.1`,
    gatewayUpAddress: `${subnet}.2`,
    gatewayAddress: `${subnet}.5`,
    machineAddress: `${subnet}.6`,
    argv: (ns, command, args) => [IP, ['netns', 'exec', ns, command, ...args]],
    remove() {
      spawnSync(IP, ['link', 'del', up!]);
      spawnSync(IP, ['netns', 'del', machineNs]);
      spawnSync(IP, ['netns', 'del', gatewayNs]);
    },
  };
  try {
    ip('netns', 'add', gatewayNs);
    ip('netns', 'add', machineNs);
    ip('link', 'add', up!, 'type', 'veth', 'peer', 'name', upPeer!);
    ip('link', 'set', upPeer!, 'netns', gatewayNs);
    ip('addr', 'add', `${net.hostAddress}/30`, 'dev', up!);
    ip('link', 'set', up!, 'up');
    ip('-n', gatewayNs, 'addr', 'add', `${net.gatewayUpAddress}/30`, 'dev', upPeer!);
    ip('-n', gatewayNs, 'link', 'set', upPeer!, 'up');
    ip('-n', gatewayNs, 'link', 'add', down!, 'type', 'veth', 'peer', 'name', downPeer!);
    ip('-n', gatewayNs, 'link', 'set', downPeer!, 'netns', machineNs);
    ip('-n', gatewayNs, 'addr', 'add', `${net.gatewayAddress}/30`, 'dev', down!);
    ip('-n', gatewayNs, 'link', 'set', down!, 'up');
    ip('-n', machineNs, 'addr', 'add', `${net.machineAddress}/30`, 'dev', downPeer!);
    ip('-n', machineNs, 'link', 'set', downPeer!, 'up');
    for (const ns of [gatewayNs, machineNs]) ip('-n', ns, 'link', 'set', 'lo', 'up');
    // The gateway's namespace relays nothing at the IP level: the machine's packets end at the gateway.
    execFileSync(IP, [
      'netns',
      'exec',
      gatewayNs,
      'sh',
      '-c',
      'echo 0 > /proc/sys/net/ipv4/ip_forward; echo 0 > /proc/sys/net/ipv6/conf/all/forwarding',
    ]);
    return net;
  } catch (error) {
    net.remove();
    throw error;
  }
}
