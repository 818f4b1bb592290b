/**
 * The Renew wire contract (protocol.md "Renew"), shared by JoinService and the agent. Pure: no database, no
 * keys, so the agent (and bcd's bundle) can import it.
 */

/** The largest Renew body read; a real one is about 1.5 KiB. */
export const MAX_RENEW_BODY_BYTES = 64 * 1024;

/** How far `clientTime` may be from the database's time. */
export const RENEW_CLOCK_SKEW_SECONDS = 60;
/** How long a proof stays in the replay cache. */
export const RENEW_REPLAY_WINDOW_SECONDS = 120;

/**
 * The exact bytes `popSig` signs: UTF-8 of `renew-pop\n<csrSha256>\n<nodeId>\n<clientTime>`, the time in
 * decimal.
 */
export function renewPopMessage(csrSha256: string, nodeId: string, clientTime: number): Buffer {
  return Buffer.from(`renew-pop\n${csrSha256}\n${nodeId}\n${clientTime}`, 'utf8');
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/** Every refusal is these bytes, whatever the reason. */
export const RENEW_REFUSED = { status: 403, body: json({ code: 'ACCESS_DENIED', message: 'Renew refused' }) } as const;
