import type http from 'node:http';
import { BASE_PATH } from '../config/config';
import { downloadsDir as defaultDownloadsDir, isDownloadPath, serveDownload } from '../downloads/serve';
import type { JoinService } from '../join/join-service';
import { JOIN_FAILED, MAX_JOIN_BODY_BYTES, type JoinAnswer } from '../../protocol/join-wire';
import { logError, logLimited } from '../log';
import type { RenewService } from '../renew/renew-service';
import { PEER_HEADER, VOUCH_HEADER, vouchHoldsBeforeBody } from '../vouching/vouch';
import { trustStateOf } from '../pki/rotation/trust-state';
import { MAX_RENEW_BODY_BYTES } from '../../protocol/renew-wire';
import type { SessionService } from '../sessions/session-service';
import {
  MAX_HELLO_BODY_BYTES,
  SESSION_ACCEPTANCE_PATH,
  SESSION_LEASE_PATH,
  SESSION_PATH,
  SESSION_REFUSED,
  SESSION_WATCH_PATH,
} from '../../protocol/session-wire';
import type { ChannelListener } from '../db/listen';
import { pipeWatchResponse, sessionWatchResponse, type SessionsChange } from '../sessions/session-watch';
import { readNodeBody } from '../http/body';
import { isClientAbort } from '../http/client-abort';
import { clientAddressOf, trustedProxies } from '../http/client-address';
import { joinCallerAddress } from '../join/caller-address';
import type { PkiRuntime } from '../join/join-runtime';
import type { RequestLimits } from '../http/request-limits';
import { addressBucket } from '../../protocol/address-bucket';
import type { RateVerdict } from '../http/shared-rate-limit';
import { tooManyRequests } from '../http/answer-later';
import {
  GATEWAY_CREDENTIALS_PATH,
  GATEWAY_CREDENTIALS_REFUSED,
  MAX_GATEWAY_CREDENTIALS_BODY_BYTES,
} from '../../protocol/gateway-credentials-wire';
import type { GatewayCredentialsService } from '../gateway-credentials/credentials-service';
import type { SiteAgentService } from '../sites/site-agent-service';
import { MAX_SITE_AGENT_BODY_BYTES, SITE_DISCOVERY_TOKEN_PATH, SITE_REDEEM_PATH } from '../../protocol/site-agent-wire';
import type { CommandResultService } from '../commands/result';
import { answerCommandResult } from './command-result-endpoint';

/** The headers of every agent answer (protocol.md fixes them as well as the bytes). */
const JOIN_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;

const JOIN_PATH = `${BASE_PATH}/v1/join`;
const RENEW_PATH = `${BASE_PATH}/v1/renew`;
const WELL_KNOWN_PATH = `${BASE_PATH}/.well-known/better-compute`;
const HELLO_PATH = `${BASE_PATH}${SESSION_PATH}`;
const LEASE_PATH = `${BASE_PATH}${SESSION_LEASE_PATH}`;
const ACCEPTANCE_PATH = `${BASE_PATH}${SESSION_ACCEPTANCE_PATH}`;
const WATCH_PATH = `${BASE_PATH}${SESSION_WATCH_PATH}`;
const CREDENTIALS_PATH = `${BASE_PATH}${GATEWAY_CREDENTIALS_PATH}`;
const SITE_MINT_PATH = `${BASE_PATH}${SITE_DISCOVERY_TOKEN_PATH}`;
const SITE_REDEEM = `${BASE_PATH}${SITE_REDEEM_PATH}`;
/** `…/v1/commands/{commandId}/result`: a node's command result (the service checks the rest of the path). */
const COMMANDS_PREFIX = `${BASE_PATH}/v1/commands/`;
/** A lease call lists the sessions that closed since the last one: larger than a Hello. */
const MAX_LEASE_BODY_BYTES = 8 * 1024 * 1024;

/** What the agent endpoints answer with: the composition root's services (server/boot/services.ts). */
export interface AgentEndpointServices {
  join: JoinService;
  renew: RenewService;
  sessions: SessionService;
  /** A node's command result, on its session's connection (server/commands/result.ts). */
  commandResults: CommandResultService;
  /** A gateway's credentials call (server/gateway-credentials/credentials-service.ts). */
  gatewayCredentials: GatewayCredentialsService;
  /** A site agent's discovery-token calls (server/sites/site-agent-service.ts). */
  siteAgent: SiteAgentService;
  /** The PKI at run time: the serving CA's pin checks a relayed join's vouched caller address. */
  pki: { load(): Promise<PkiRuntime | null> };
  /** The LISTEN on the session-end channel that every gateway's watch stream shares. */
  sessionsListener: () => ChannelListener<SessionsChange>;
  /** The well-known document (server/entry/well-known.ts). */
  wellKnown: () => Promise<Record<string, unknown>>;
  /** The shared limits of the downloads and the well-known document. */
  endpointLimits: RequestLimits;
  /** Where bcd builds are served from, asked per request (downloadsDir reads BETTER_COMPUTE_DOWNLOADS_DIR); the working directory's by default. */
  downloadsDir?: () => string;
}

/** Takes a request on an agent path and answers it; false when `pathname` is not one (the caller serves it). */
type AgentEndpoints = (req: http.IncomingMessage, res: http.ServerResponse, pathname: string) => boolean;

/** The paths whose answers carry no request-id header: protocol.md fixes the join's and renewal's headers. */
export const hasFixedHeaders = (pathname: string | null) => pathname === JOIN_PATH || pathname === RENEW_PATH;

/** The socket's peer, or a trusted proxy's client (BETTER_COMPUTE_TRUSTED_PROXIES). */
const directAddress = (req: http.IncomingMessage) =>
  clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustedProxies());

const gatewayHeader = (req: http.IncomingMessage, name: string) =>
  typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined;

/**
 * The agent's side of the HTTP surface (protocol.md), served from one place by the boot server in
 * production, development and the tests' server processes alike: the join and the renewal (the hot path,
 * before Next: a join costs well under a millisecond of our own work, and Next's route machinery would add
 * about as much again), the gateway's session calls (a relayed Hello, its lease, an acceptance: only the
 * gateway's vouching makes any count, so a direct caller gets the uniform refusal), the well-known document
 * and the bcd downloads (streamed files). `pathname` is the request's path with dot segments resolved.
 */
export function createAgentEndpoints(services: AgentEndpointServices): AgentEndpoints {
  const downloads = services.downloadsDir ?? (() => defaultDownloadsDir(process.cwd()));
  return (req, res, pathname) => {
    if (req.method === 'POST') {
      if (pathname === JOIN_PATH) {
        return answerAgent(req, res, MAX_JOIN_BODY_BYTES, 'join', async (body) => {
          // Where the join came from, for its join request or refusal event: the socket (or a trusted proxy's
          // word), or the caller the gateway vouched for when it relayed this very body.
          const caller = await joinCallerAddress(directAddress(req), gatewayHeader(req, VOUCH_HEADER), body, JOIN_PATH, () =>
            services.pki.load(),
          );
          return services.join.joinBody(body, caller);
        });
      }
      if (pathname === RENEW_PATH) {
        return answerAgent(req, res, MAX_RENEW_BODY_BYTES, 'renew', (body) =>
          services.renew.renew({ body, vouch: gatewayHeader(req, VOUCH_HEADER), peer: gatewayHeader(req, PEER_HEADER), path: RENEW_PATH }),
        );
      }
      if (pathname === HELLO_PATH) {
        return answerAgent(req, res, MAX_HELLO_BODY_BYTES * 2, 'session', (body) =>
          services.sessions.hello({ body, vouch: gatewayHeader(req, VOUCH_HEADER), peer: gatewayHeader(req, PEER_HEADER), path: pathname }),
        );
      }
      if (pathname === LEASE_PATH || pathname === ACCEPTANCE_PATH) {
        void refuseUnvouched(req, res, pathname, services).then((refused) => {
          if (refused) return;
          answerAgent(req, res, MAX_LEASE_BODY_BYTES, 'session', (body) => {
            const call = { body, vouch: gatewayHeader(req, VOUCH_HEADER), peer: gatewayHeader(req, PEER_HEADER), path: pathname };
            return pathname === ACCEPTANCE_PATH ? services.sessions.acceptance(call) : services.sessions.lease(call);
          });
        });
        return true;
      }
      if (pathname === SITE_MINT_PATH || pathname === SITE_REDEEM) {
        return answerAgent(req, res, MAX_SITE_AGENT_BODY_BYTES, 'site agent', (body) => {
          const call = { body, vouch: gatewayHeader(req, VOUCH_HEADER), peer: gatewayHeader(req, PEER_HEADER), path: pathname };
          return pathname === SITE_MINT_PATH ? services.siteAgent.mint(call) : services.siteAgent.redeem(call);
        });
      }
      if (pathname === WATCH_PATH) return (void watchSessions(req, res, services), true);
      if (pathname.startsWith(COMMANDS_PREFIX))
        return (void answerCommandResult(req, res, pathname, pathname.slice(BASE_PATH.length), services), true);
      if (pathname === CREDENTIALS_PATH) return (void answerGatewayCredentials(req, res, services.gatewayCredentials), true);
      return false;
    }
    if (pathname === WELL_KNOWN_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
      void serveWellKnown(req, res, services.wellKnown, () => services.endpointLimits.wellKnown.hit(addressBucket(directAddress(req))));
      return true;
    }
    // bcd downloads are files: served here, streamed, whether or not Next has loaded.
    if (isDownloadPath(pathname)) {
      void services.endpointLimits.downloads.serve(req, res, directAddress(req), () => serveDownload(req, res, pathname, downloads()));
      return true;
    }
    return false;
  };
}

/**
 * The gateway-only paths whose bodies may be large (lease, acceptance, watch: 8 MiB) check the vouching's
 * signature, chain, age and path before reading a byte of the body: a caller without a gateway's vouching gets
 * the uniform session refusal at once, and the connection closes, so the rest of its body is never read. Only
 * the body's hash is left for the service to check. Answers and returns true when it refused; without a PKI,
 * leaves the answer to the service.
 */
async function refuseUnvouched(req: http.IncomingMessage, res: http.ServerResponse, path: string, services: AgentEndpointServices) {
  try {
    const pki = await services.pki.load();
    if (!pki || vouchHoldsBeforeBody(gatewayHeader(req, VOUCH_HEADER), path, trustStateOf(pki).servingCaPins)) return false;
  } catch (error) {
    logError('session request failed', error);
  }
  res
    .writeHead(SESSION_REFUSED.status, { ...JOIN_HEADERS, connection: 'close', 'content-length': SESSION_REFUSED.body.length })
    .end(SESSION_REFUSED.body);
  return true;
}

/** Reads the body under `limit` (null past it: the service answers its uniform refusal) and writes the answer. */
function answerAgent(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  limit: number,
  what: 'join' | 'renew' | 'session' | 'site agent',
  answer: (body: Buffer | null) => Promise<JoinAnswer>,
): true {
  void (async () => {
    try {
      const reply = await answer(await readNodeBody(req, limit));
      res.writeHead(reply.status, { ...JOIN_HEADERS, 'content-length': reply.body.length }).end(reply.body);
    } catch (error) {
      if (isClientAbort(error)) {
        // The client went away, or Node timed it out (and answers 408 itself): nothing more to write.
        if (what === 'join') logLimited('join-client-abort', 'a join request ended before its body arrived (client closed or timed out)');
        return;
      }
      logError(`${what} request failed`, error);
      if (res.headersSent) res.destroy();
      else res.writeHead(JOIN_FAILED.status, { ...JOIN_HEADERS, 'content-length': JOIN_FAILED.body.length }).end(JOIN_FAILED.body);
    }
  })();
  return true;
}

/**
 * A gateway's watch of its sessions' ends: an event stream for as long as the gateway keeps it open, once its
 * vouching checks out (authorizeWatch); anyone else gets the uniform session refusal.
 */
async function watchSessions(req: http.IncomingMessage, res: http.ServerResponse, services: AgentEndpointServices) {
  try {
    if (await refuseUnvouched(req, res, WATCH_PATH, services)) return;
    const body = await readNodeBody(req, MAX_LEASE_BODY_BYTES);
    const call = { body, vouch: gatewayHeader(req, VOUCH_HEADER), peer: gatewayHeader(req, PEER_HEADER), path: WATCH_PATH };
    const gatewayId = await services.sessions.authorizeWatch(call);
    if (gatewayId) return pipeWatchResponse(sessionWatchResponse(services.sessionsListener(), gatewayId), res);
    res.writeHead(SESSION_REFUSED.status, { ...JOIN_HEADERS, 'content-length': SESSION_REFUSED.body.length }).end(SESSION_REFUSED.body);
  } catch (error) {
    if (isClientAbort(error)) return;
    logError('session request failed', error);
    if (res.headersSent) res.destroy();
    else res.writeHead(JOIN_FAILED.status, { ...JOIN_HEADERS, 'content-length': JOIN_FAILED.body.length }).end(JOIN_FAILED.body);
  }
}

/**
 * A gateway's credentials call: its vouching (under any trusted serving CA) is checked before a byte of the body
 * is read, the body is capped, and every refusal is the same bytes (a 429 past the gateway's rate).
 */
async function answerGatewayCredentials(req: http.IncomingMessage, res: http.ServerResponse, service: GatewayCredentialsService) {
  const refuse = (close: boolean) =>
    res
      .writeHead(GATEWAY_CREDENTIALS_REFUSED.status, {
        ...JOIN_HEADERS,
        ...(close ? { connection: 'close' } : {}),
        'content-length': GATEWAY_CREDENTIALS_REFUSED.body.length,
      })
      .end(GATEWAY_CREDENTIALS_REFUSED.body);
  try {
    const vouch = gatewayHeader(req, VOUCH_HEADER);
    if (!(await service.holdsBeforeBody(vouch, CREDENTIALS_PATH))) return refuse(true);
    const body = await readNodeBody(req, MAX_GATEWAY_CREDENTIALS_BODY_BYTES);
    const reply = await service.answer({ body, vouch, peer: gatewayHeader(req, PEER_HEADER), path: CREDENTIALS_PATH });
    const extra = reply.retryAfterSeconds ? { 'retry-after': String(reply.retryAfterSeconds) } : {};
    res.writeHead(reply.status, { ...JOIN_HEADERS, ...extra, 'content-length': reply.body.length }).end(reply.body);
  } catch (error) {
    if (isClientAbort(error)) return;
    logError('gateway credentials request failed', error);
    if (res.headersSent) res.destroy();
    else res.writeHead(JOIN_FAILED.status, { ...JOIN_HEADERS, 'content-length': JOIN_FAILED.body.length }).end(JOIN_FAILED.body);
  }
}

/**
 * The well-known document with its length (so HEAD, which answers GET's headers, names it too); public for a
 * minute. Each call first takes one hit of the shared per-address limit (`limit`), a 429 with retry-after past
 * it. The document itself costs no database work, but one indexed `rate_limit_hit()` per call is small next
 * to the call's own HTTP (and TLS) work, and it makes the limit exact across instances; a refused address is
 * then remembered by the process until its window ends, so a flood past the limit stays off the database.
 * The gateway's relay answers from its own short cache (server/gateway/well-known.ts), so the API sees at most
 * one call per gateway process every few seconds, whatever reaches the gateway.
 */
async function serveWellKnown(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  build: () => Promise<Record<string, unknown>>,
  limit: () => Promise<RateVerdict>,
) {
  try {
    const verdict = await limit();
    if (!verdict.allowed) return void tooManyRequests(res, verdict.retryAfterSeconds);
    const bytes = Buffer.from(JSON.stringify(await build()));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes.length, 'cache-control': 'public, max-age=60' });
    res.end(req.method === 'HEAD' ? undefined : bytes);
  } catch (error) {
    logError('well-known document failed', error);
    if (res.headersSent) return void res.destroy();
    const body = JSON.stringify({ code: 'INTERNAL', message: 'Internal error' });
    res
      .writeHead(500, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) })
      .end(body);
  }
}
