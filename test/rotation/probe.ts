import { prepareJoinAttempt } from '../../agent/join';
import { postToGateway } from '../../agent/renew/gateway-client';
import { certificatePin, BASE, newJoinToken, wellKnownOf, type RotationDeployment } from './deployment';
import { machineClaims } from '../join-harness';

/** What a join answer says about the trust of the instance that made it. */
interface ProbedJoin {
  /** The pin of the node CA that issued the certificate. */
  nodeCaPin: string;
  /** The pins of `commandTrustBundle`, in order. */
  commandPins: string[];
  /** The answer's `trust` (protocol.md "Answers"). */
  trust: { version: number; servingCaPins: string[]; joinSigningKeyPins: string[]; joinEncryptionKeyPins: string[] };
  /** The pins of the envelope's `sigs`, when it carries them. */
  sigPins: string[];
}

/**
 * A fresh machine joins through gateway `gateway` (relaying to API `gateway`) with the keys the well-known
 * document of that API publishes now, the chain checked against the serving CA pin it publishes now: what the
 * answer says about that instance's trust.
 */
export async function probeJoin(d: RotationDeployment, gateway: number): Promise<ProbedJoin> {
  const doc = await wellKnownOf(d.apis[gateway]!.url);
  const trust = {
    encryptionJwk: doc.join.encryptionJwk as Parameters<typeof prepareJoinAttempt>[0]['trust']['encryptionJwk'],
    signingCertificateDer: Buffer.from(doc.join.signingCertificate, 'base64'),
    signingKeyPin: doc.join.signingKeyPin,
  };
  const attempt = await prepareJoinAttempt({ token: await newJoinToken(d), trust, claims: machineClaims() });
  const target = { gatewayUrl: d.gateways[gateway]!.url, servingCaPin: doc.gateway.servingCaPin };
  const reply = await postToGateway(target, undefined, `${BASE}/v1/join`, attempt.body);
  if (reply.status !== 200) throw new Error(`a join through gateway ${gateway} answered ${reply.status}: ${reply.body.toString()}`);
  const envelope = JSON.parse(reply.body.toString()) as { body: string; sig: string; sigs?: Array<{ pin: string }> };
  const body = JSON.parse(Buffer.from(envelope.body, 'base64url').toString('utf8')) as {
    certificateChain: string[];
    commandTrustBundle: string[];
    trust: ProbedJoin['trust'];
  };
  return {
    nodeCaPin: certificatePin(body.certificateChain[1]!),
    commandPins: body.commandTrustBundle.map(certificatePin),
    trust: body.trust,
    sigPins: (envelope.sigs ?? []).map((s) => s.pin),
  };
}
