import type http from 'node:http';
import { MAX_COMMAND_RESULT_BODY_BYTES, RESULT_REFUSED } from '../../protocol/command-wire';
import type { CommandResultService } from '../commands/result';
import { isClientAbort } from '../http/client-abort';
import { readNodeBody } from '../http/body';
import { logError } from '../log';
import { PEER_HEADER, VOUCH_HEADER, vouchHoldsBeforeBody } from '../vouching/vouch';
import { trustStateOf } from '../pki/rotation/trust-state';
import type { PkiRuntime } from '../join/join-runtime';

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;
const header = (req: http.IncomingMessage, name: string) =>
  typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined;

/**
 * `POST {base}/v1/commands/{commandId}/result` (protocol.md "Commands"), relayed by a gateway: its vouching is
 * checked before a byte of the body is read (a direct caller gets the uniform refusal and the connection
 * closes), the body is read up to MAX_COMMAND_RESULT_BODY_BYTES (past it: refused), and the service decides.
 */
export async function answerCommandResult(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  pathname: string,
  route: string,
  services: { commandResults: CommandResultService; pki: { load(): Promise<PkiRuntime | null> } },
): Promise<void> {
  const refuse = (close: boolean) =>
    void res
      .writeHead(RESULT_REFUSED.status, {
        ...HEADERS,
        ...(close ? { connection: 'close' } : {}),
        'content-length': RESULT_REFUSED.body.length,
      })
      .end(RESULT_REFUSED.body);
  try {
    const pki = await services.pki.load();
    if (pki && !vouchHoldsBeforeBody(header(req, VOUCH_HEADER), pathname, trustStateOf(pki).servingCaPins)) return refuse(true);
    const body = await readNodeBody(req, MAX_COMMAND_RESULT_BODY_BYTES);
    const reply = await services.commandResults.answer({
      body,
      vouch: header(req, VOUCH_HEADER),
      peer: header(req, PEER_HEADER),
      path: pathname,
      route,
    });
    res.writeHead(
      reply.status,
      reply.status === 204 ? { 'cache-control': 'no-store' } : { ...HEADERS, 'content-length': reply.body.length },
    );
    res.end(reply.status === 204 ? undefined : reply.body);
  } catch (error) {
    if (isClientAbort(error)) return;
    logError('command result request failed', error);
    if (res.headersSent) res.destroy();
    else refuse(false);
  }
}
