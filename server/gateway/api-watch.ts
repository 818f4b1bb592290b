import http from 'node:http';
import { vouchHeaders } from '../vouching/vouch';
import type { ApiRelay } from './relay';
import type { ApiWatch } from './session-hub';

/**
 * The watch stream (session-hub.ts): its own connection, outside the relay's pool, read as Server-Sent
 * Events of which only the `event:` lines matter.
 */
export function apiWatch(api: URL, relay: ApiRelay): ApiWatch {
  return (pathname, body, onEvent) => {
    let close = () => {};
    const ended = new Promise<void>((resolve) => {
      const headers = {
        ...vouchHeaders(relay.currentVoucher, null, body, pathname),
        'content-type': 'application/json',
        'content-length': String(body.length),
      };
      const request = http.request(
        { protocol: api.protocol, hostname: api.hostname, port: api.port, method: 'POST', path: pathname, headers, agent: false },
        (upstream) => {
          if (upstream.statusCode !== 200) {
            upstream.resume();
            upstream.on('end', resolve);
            return;
          }
          let pending = '';
          upstream.setEncoding('utf8');
          upstream.on('data', (chunk: string) => {
            pending += chunk;
            const lines = pending.split('\n');
            pending = lines.pop()!;
            for (const line of lines) if (line.startsWith('event:')) onEvent(line.slice(6).trim());
          });
          upstream.on('close', resolve);
          upstream.on('error', resolve);
        },
      );
      request.on('error', () => resolve());
      request.on('close', () => resolve());
      close = () => request.destroy();
      request.end(body);
    });
    return { ended, close: () => close() };
  };
}
