import { mkdir } from 'node:fs/promises';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { writeIdentity } from '../identity-store';
import { DEFAULT_BASE_PATH } from '../join';
import { loggedFetch } from '../request-log';
import type { IssuedAnswer } from '../verify-answer';
import { TpmError } from './client';
import { ekHashOf, withTpm } from './identify';
import { prepareTpmJoin, type TpmJoinMaterial } from './join-material';
import { encodeKeyBlob } from './keys';
import { loadPendingTpmJoin, removePendingTpmJoin, savePendingTpmJoin } from './pending-join';
import { runTpmJoin, TpmJoinError, type PostJoin, type TpmJoinTarget } from './tpm-join';
import { AgentError } from '../errors';

/** A join request the machine waits on: what the operator is told to look for. */
interface TpmJoinWait {
  readonly requestId: string;
  /** The EK hash: what an operator matches in the queue, or adds to an allow-list. */
  readonly ekHash: string;
  readonly retryAfterSeconds: number;
}

type TpmJoinOutcome =
  { readonly status: 'joined'; readonly answer: IssuedAnswer; readonly ekHash: string } | ({ readonly status: 'pending' } & TpmJoinWait);

/** The uniform refusal (403 `ACCESS_DENIED`, "Join refused"), as the server sent it: it never says why. */
export class TpmJoinRefused extends AgentError {
  constructor(
    readonly serverCode: string,
    message: string,
    readonly ekHash: string,
  ) {
    super('REFUSED', message);
    this.name = 'TpmJoinRefused';
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => (signal?.removeEventListener('abort', abort), resolve()), ms);
    const abort = () => (clearTimeout(timer), reject(signal!.reason as Error));
    signal?.addEventListener('abort', abort, { once: true });
  });

/** A failure worth waiting out while a request is pending: the server or the network, not the answer's checks. */
const isTransient = (error: unknown) =>
  (error instanceof TpmJoinError && (error.status === 409 || error.status >= 500)) ||
  (error instanceof TypeError && /fetch failed/i.test(error.message));

/**
 * `bcd join --attestor tpm` and `better-compute agent join --attestor tpm`: a tokenless join whose node key the
 * TPM makes and holds (docs/tpm-attestation.md). Each attempt opens the TPM, runs both round trips
 * ({@link runTpmJoin}) and closes it. An admitted join writes `node.key` (the node key's TPM blob), `ak.key`
 * and `identity.json`. A `pending` answer saves the attempt ({@link savePendingTpmJoin}) so every retry, in this
 * run or a later one, presents the same CSR the approval will name; with `wait` the join retries after the
 * server's `retryAfterSeconds` (as a PXE machine does) until it is admitted or refused, else it returns the
 * pending outcome at once. The uniform refusal is a {@link TpmJoinRefused} and drops the saved attempt.
 */
export async function joinWithTpm(options: {
  serverUrl: string;
  basePath?: string;
  trust: { signingKeyPin: string; signingCertificateDer: Buffer };
  claims: HardwareClaims;
  target: TpmJoinTarget;
  identityDir: string;
  /** `--tpm` / `BCD_TPM`: a device path or `swtpm:HOST:PORT`; `/dev/tpmrm0` when unset. */
  tpmAddress?: string;
  reset?: boolean;
  wait: boolean;
  /** Retry a pending join after this many seconds instead of the server's `retryAfterSeconds` (tests). */
  retryAfterSeconds?: number;
  /** Told once per join request the machine waits on. */
  onPending?: (wait: TpmJoinWait) => void;
  /** A transient failure while waiting (the join retries). */
  log?: (line: string) => void;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}): Promise<TpmJoinOutcome> {
  const doFetch = loggedFetch(options.fetch ?? fetch);
  const url = `${options.serverUrl}${options.basePath ?? DEFAULT_BASE_PATH}/v1/join`;
  let lastBody = Buffer.alloc(0);
  const post: PostJoin = async (body) => {
    const response = await doFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: options.signal });
    lastBody = Buffer.from(await response.arrayBuffer());
    return { status: response.status, body: lastBody };
  };
  await mkdir(options.identityDir, { recursive: true, mode: 0o700 });
  let material: TpmJoinMaterial | null = await loadPendingTpmJoin(options.identityDir, options.target);
  let saved = material !== null;
  let announced: string | null = null;
  for (;;) {
    let result: Awaited<ReturnType<typeof runTpmJoin>>;
    try {
      result = await withTpm(options.tpmAddress, async (tpm) => {
        material ??= await prepareTpmJoin(tpm);
        return runTpmJoin(tpm, { post, trust: options.trust, claims: options.claims, target: options.target, material });
      });
    } catch (error) {
      const ekHash = material ? ekHashOf(Buffer.from(material.attestation.ekPublic, 'base64')) : '';
      if (error instanceof TpmJoinError && error.status === 403) {
        await removePendingTpmJoin(options.identityDir);
        const answer = parseError(lastBody);
        throw new TpmJoinRefused(answer.code ?? 'ACCESS_DENIED', answer.message ?? 'Join refused', ekHash);
      }
      if (saved && error instanceof TpmError) {
        // The saved AK no longer loads (a cleared or replaced TPM): that attempt can never be answered.
        await removePendingTpmJoin(options.identityDir);
        throw new Error(`the TPM cannot use the saved attempt of this join (${error.message}); it was removed: run the join again`, {
          cause: error,
        });
      }
      if (announced && options.wait && isTransient(error)) {
        options.log?.(`join attempt failed (${(error as Error).message}); retrying`);
        await sleep((options.retryAfterSeconds ?? 30) * 1000, options.signal);
        continue;
      }
      throw error;
    }
    material = result.material;
    const ekHash = ekHashOf(Buffer.from(material.attestation.ekPublic, 'base64'));
    const { answer } = result;
    if (answer.status === 'pending') {
      if (!saved) await savePendingTpmJoin(options.identityDir, options.target, material);
      saved = true;
      const retryAfterSeconds = options.retryAfterSeconds ?? answer.retryAfterSeconds;
      if (announced !== answer.requestId) options.onPending?.({ requestId: answer.requestId, ekHash, retryAfterSeconds });
      announced = answer.requestId;
      if (!options.wait) return { status: 'pending', requestId: answer.requestId, ekHash, retryAfterSeconds };
      await sleep(retryAfterSeconds * 1000, options.signal);
      continue;
    }
    if (answer.status !== 'joined') throw new Error(`the join answered ${answer.status}`);
    await writeIdentity(
      options.identityDir,
      {
        privateKeyPem: encodeKeyBlob(material.nodeKey),
        certificateChain: answer.certificateChain,
        nodeId: answer.nodeId,
        siteId: answer.siteId,
        trustDomain: answer.trustDomain,
        role: answer.role,
      },
      { reset: options.reset, akKey: encodeKeyBlob(material.ak) },
    );
    await removePendingTpmJoin(options.identityDir);
    return { status: 'joined', answer, ekHash };
  }
}

function parseError(body: Buffer): { code?: string; message?: string } {
  try {
    return JSON.parse(body.toString('utf8')) as { code?: string; message?: string };
  } catch {
    return {};
  }
}
