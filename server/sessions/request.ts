import {
  MAX_REFUSED_COMMANDS_PER_LEASE,
  parseCommandKinds,
  parseTrustVersion,
  type LeaseCall,
  type RelayedHello,
} from '../../protocol/session-wire';
import { COMMAND_ID } from '../../protocol/command-wire';

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const VERSION = /^[\x21-\x7e]{1,64}$/;

const parseObject = (text: string): Record<string, unknown> | null => {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};

/** The gateway's wrapping of a Hello, or null. */
export function parseRelayedHello(body: Buffer): RelayedHello | null {
  const value = parseObject(body.toString('utf8'));
  if (!value || typeof value.gatewayId !== 'string' || !ID.test(value.gatewayId) || typeof value.hello !== 'string') return null;
  return { gatewayId: value.gatewayId, hello: value.hello };
}

/** A Hello as the API decides it. `commandKinds` is parsed and bounded, and not stored yet. */
interface Hello {
  nodeId: string;
  agentVersion: string;
  /** The trust set version the agent holds (0: none). */
  trustVersion: number;
  commandKinds: string[];
}

/** The agent's Hello (protocol.md "Sessions"); unknown fields are ignored, null when malformed. */
export function parseHello(text: string): Hello | null {
  const value = parseObject(text);
  if (!value || typeof value.nodeId !== 'string' || !ID.test(value.nodeId)) return null;
  const agentVersion = value.agentVersion === undefined ? 'unknown' : value.agentVersion;
  if (typeof agentVersion !== 'string' || !VERSION.test(agentVersion)) return null;
  const trustVersion = parseTrustVersion(value.trustVersion);
  const commandKinds = parseCommandKinds(value.commandKinds);
  if (trustVersion === null || commandKinds === null) return null;
  return { nodeId: value.nodeId, agentVersion, trustVersion, commandKinds };
}

/** The gateway's lease call, or null. */
export function parseLeaseCall(body: Buffer): LeaseCall | null {
  const value = parseObject(body.toString('utf8'));
  if (!value || typeof value.gatewayId !== 'string' || !ID.test(value.gatewayId)) return null;
  const closed = value.closed ?? [];
  if (!Array.isArray(closed) || closed.length > 100_000 || !closed.every((id) => typeof id === 'string' && ID.test(id))) return null;
  const refused = value.refusedCommands ?? [];
  if (
    !Array.isArray(refused) ||
    refused.length > MAX_REFUSED_COMMANDS_PER_LEASE ||
    !refused.every((id) => typeof id === 'string' && COMMAND_ID.test(id))
  )
    return null;
  return { gatewayId: value.gatewayId, closed: closed as string[], refusedCommands: refused as string[] };
}
