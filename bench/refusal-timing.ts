import { prepareJoinAttempt, type JoinTrust } from '../agent/join';
import { percentile } from '../agent/sim/percentiles';
import { simulatedClaims } from '../agent/sim/simulate';
import { newId } from '../server/ids';
import { formatJoinToken, newTokenSecret, parseJoinToken } from '../server/tokens/secret';

/** Medians of the two refusals an outsider can tell apart only by timing, if at all. */
interface RefusalTiming {
  samples: number;
  /** A well-formed token whose id does not exist. */
  unknownIdMedianMs: number;
  /** A token naming an existing id with a wrong secret. */
  wrongSecretMedianMs: number;
  /** wrongSecret / unknownId: 1 means the timing says nothing about whether an id exists. */
  ratio: number;
}

/**
 * Measures the refusal of an unknown token id against the refusal of a known id (`knownToken`'s) with a
 * wrong secret: `samples` of each, interleaved and sent one at a time, each a fresh join request (new key,
 * CSR and seal, prepared before the clock starts), so both series see the same server and database
 * conditions. `send` posts one body and resolves when the answer is in; it must be a 403.
 */
export async function measureRefusalTiming(options: {
  knownToken: string;
  trust: JoinTrust;
  samples: number;
  send: (body: string) => Promise<number>;
}): Promise<RefusalTiming> {
  const known = parseJoinToken(options.knownToken);
  if (!known) throw new Error('knownToken is not a join token');
  const prepare = async (token: string, i: number) =>
    (await prepareJoinAttempt({ token, trust: options.trust, claims: simulatedClaims(i) })).body;
  const unknown: string[] = [];
  const wrong: string[] = [];
  for (let i = 0; i < options.samples; i++) {
    unknown.push(await prepare(formatJoinToken(newId('jt'), newTokenSecret()), i));
    wrong.push(await prepare(formatJoinToken(known.id, wrongSecret(known.secret)), i));
  }
  const times = { unknown: [] as number[], wrong: [] as number[] };
  const timed = async (body: string, into: number[]) => {
    const t0 = performance.now();
    const status = await options.send(body);
    into.push(performance.now() - t0);
    if (status !== 403) throw new Error(`a refusal was expected, the server answered ${status}`);
  };
  for (let i = 0; i < options.samples; i++) {
    // Alternate which goes first, so neither series always follows the other.
    if (i % 2 === 0) {
      await timed(unknown[i]!, times.unknown);
      await timed(wrong[i]!, times.wrong);
    } else {
      await timed(wrong[i]!, times.wrong);
      await timed(unknown[i]!, times.unknown);
    }
  }
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const unknownIdMedianMs = percentile(times.unknown, 50);
  const wrongSecretMedianMs = percentile(times.wrong, 50);
  return {
    samples: options.samples,
    unknownIdMedianMs: round(unknownIdMedianMs),
    wrongSecretMedianMs: round(wrongSecretMedianMs),
    ratio: round(wrongSecretMedianMs / unknownIdMedianMs),
  };
}

function wrongSecret(secret: string): string {
  for (;;) {
    const candidate = newTokenSecret();
    if (candidate !== secret) return candidate;
  }
}

export const formatRefusalTiming = (r: RefusalTiming) =>
  `refusal medians (${r.samples} each, interleaved): unknown token id ${r.unknownIdMedianMs} ms, known id with a wrong secret ${r.wrongSecretMedianMs} ms, ratio ${r.ratio} (target ≤ 1.05)`;
