import { randomBytes } from 'node:crypto';
import { ALG, CAP, CC, RC, RH, SE, ST, SU_CLEAR } from '../../protocol/tpm/constants';
import { TpmReader, TpmWriter } from '../../protocol/tpm/marshal';
import { openTpmTransport, type TpmAddress, type TpmTransport } from './transport';
import { AgentError } from '../errors';

/** A TPM command that answered with a response code other than success. */
export class TpmError extends AgentError {
  constructor(
    readonly command: string,
    readonly rc: number,
  ) {
    super('TPM', `TPM2_${command} failed: TPM_RC 0x${rc.toString(16).padStart(3, '0')}`);
    this.name = 'TpmError';
  }

  /** The code without its handle, session or parameter number (Part 2 §6.6.3: format-one codes). */
  get baseCode(): number {
    return this.rc & 0x80 ? this.rc & 0xbf : this.rc;
  }
}

/** One authorization of a command (Part 1 §18: the password session, or a policy session bcd started). */
interface Authorization {
  handle: number;
  attributes: number;
  hmac: Buffer;
}

/** The empty password of a hierarchy or key bcd made (bcd sets no authValues: the TPM itself is the secret). */
export const PASSWORD: Authorization = { handle: RH.passwordSession, attributes: 0x01, hmac: Buffer.alloc(0) };

/** What a command answered: its output handles, then a reader positioned on its parameters. */
interface TpmResponse {
  handles: number[];
  params: TpmReader;
}

/** A loaded object's public area (TPMT_PUBLIC, without the TPM2B size) and Name. */
interface LoadedPublic {
  publicArea: Buffer;
  name: Buffer;
}

const HEADER_BYTES = 10;
/** TPM_RC_YIELDED, TPM_RC_TESTING and TPM_RC_RETRY: warnings that mean "send it again". */
const RETRY_CODES = new Set([0x908, 0x90a, 0x922]);
const MAX_ATTEMPTS = 10;

/**
 * A TPM 2.0 client with bcd's own command encoding, so bcd needs no TSS or tpm2-tools on the host. Commands
 * run one at a time over one transport; every authorization is a password or a policy session without HMAC
 * (bcd's objects have empty authValues), so no cpHash or session key is ever computed.
 */
export class TpmClient {
  constructor(private readonly transport: TpmTransport) {}

  static async open(address: TpmAddress): Promise<TpmClient> {
    return new TpmClient(await openTpmTransport(address));
  }

  close(): Promise<void> {
    return this.transport.close();
  }

  /**
   * Sends one command. `handleCount` is how many handles the response carries before its parameters (Part 3
   * lists them per command); with authorizations the response's parameters are size-prefixed and followed by
   * the session area, which bcd does not need to check (no HMAC sessions).
   */
  async execute(
    name: string,
    code: number,
    handles: number[],
    auths: Authorization[],
    params: Buffer,
    handleCount = 0,
  ): Promise<TpmResponse> {
    const body = new TpmWriter();
    for (const handle of handles) body.u32(handle);
    if (auths.length > 0) {
      const area = new TpmWriter();
      for (const auth of auths) area.u32(auth.handle).sized(Buffer.alloc(0)).u8(auth.attributes).sized(auth.hmac);
      const bytes = area.toBuffer();
      body.u32(bytes.length).bytes(bytes);
    }
    body.bytes(params);
    const payload = body.toBuffer();
    const command = new TpmWriter()
      .u16(auths.length > 0 ? ST.sessions : ST.noSessions)
      .u32(HEADER_BYTES + payload.length)
      .u32(code)
      .bytes(payload)
      .toBuffer();
    let response = await this.transport.send(command);
    // The TPM may ask for the same command again (Part 2 §6.6: RETRY, YIELDED, TESTING); a TSS retries.
    for (let attempt = 1; attempt < MAX_ATTEMPTS && RETRY_CODES.has(response.readUInt32BE(6)); attempt++) {
      response = await this.transport.send(command);
    }
    const rc = response.readUInt32BE(6);
    if (rc !== RC.success) throw new TpmError(name, rc);
    const reader = new TpmReader(response.subarray(HEADER_BYTES));
    const outHandles: number[] = [];
    for (let i = 0; i < handleCount; i++) outHandles.push(reader.u32());
    if (response.readUInt16BE(0) === ST.sessions) {
      const size = reader.u32();
      return { handles: outHandles, params: new TpmReader(reader.bytes(size)) };
    }
    return { handles: outHandles, params: reader };
  }

  /** TPM2_Startup(CLEAR), unless the TPM already started (the platform's firmware normally did). */
  async startup(): Promise<void> {
    try {
      await this.execute('Startup', CC.startup, [], [], new TpmWriter().u16(SU_CLEAR).toBuffer());
    } catch (error) {
      if (!(error instanceof TpmError && error.rc === RC.initialize)) throw error;
    }
  }

  /** One TPM_PT property's value, or undefined when the TPM does not report it. */
  async getProperty(property: number): Promise<number | undefined> {
    const params = new TpmWriter().u32(CAP.tpmProperties).u32(property).u32(1).toBuffer();
    const { params: r } = await this.execute('GetCapability', CC.getCapability, [], [], params);
    r.u8(); // moreData
    if (r.u32() !== CAP.tpmProperties) throw new Error('TPM2_GetCapability answered another capability');
    const count = r.u32();
    for (let i = 0; i < count; i++) {
      const tag = r.u32();
      const value = r.u32();
      if (tag === property) return value;
    }
    return undefined;
  }

  /** Handles of one range in use (for example NV indices 0x01000000…), up to `max`. */
  async getHandles(first: number, max = 64): Promise<number[]> {
    const params = new TpmWriter().u32(CAP.handles).u32(first).u32(max).toBuffer();
    const { params: r } = await this.execute('GetCapability', CC.getCapability, [], [], params);
    r.u8();
    if (r.u32() !== CAP.handles) throw new Error('TPM2_GetCapability answered another capability');
    const count = r.u32();
    return Array.from({ length: count }, () => r.u32());
  }

  async readPublic(handle: number): Promise<LoadedPublic> {
    const { params: r } = await this.execute('ReadPublic', CC.readPublic, [handle], [], Buffer.alloc(0));
    const publicArea = r.sized();
    const name = r.sized();
    r.sized(); // qualifiedName
    r.end('TPM2_ReadPublic');
    return { publicArea, name };
  }

  /** TPM2_CreatePrimary under `hierarchy` from a TPMT_PUBLIC template; the same template gives the same key. */
  async createPrimary(hierarchy: number, template: Buffer): Promise<LoadedPublic & { handle: number }> {
    const params = new TpmWriter().bytes(emptySensitiveCreate()).sized(template).sized(Buffer.alloc(0)).u32(0).toBuffer();
    const { handles, params: r } = await this.execute('CreatePrimary', CC.createPrimary, [hierarchy], [PASSWORD], params, 1);
    const publicArea = r.sized();
    r.sized(); // creationData
    r.sized(); // creationHash
    skipTicket(r); // creationTicket
    const name = r.sized();
    r.end('TPM2_CreatePrimary');
    return { handle: handles[0]!, publicArea, name }; // execute read exactly one handle
  }

  /** TPM2_Create: a new key under a loaded storage parent, returned as its wrapped private and public areas. */
  async create(parent: number, template: Buffer): Promise<{ privateBlob: Buffer; publicArea: Buffer }> {
    const params = new TpmWriter().bytes(emptySensitiveCreate()).sized(template).sized(Buffer.alloc(0)).u32(0).toBuffer();
    const { params: r } = await this.execute('Create', CC.create, [parent], [PASSWORD], params);
    const privateBlob = r.sized();
    const publicArea = r.sized();
    r.sized();
    r.sized();
    skipTicket(r);
    r.end('TPM2_Create');
    return { privateBlob, publicArea };
  }

  async load(parent: number, privateBlob: Buffer, publicArea: Buffer): Promise<{ handle: number; name: Buffer }> {
    const params = new TpmWriter().sized(privateBlob).sized(publicArea).toBuffer();
    const { handles, params: r } = await this.execute('Load', CC.load, [parent], [PASSWORD], params, 1);
    const name = r.sized();
    r.end('TPM2_Load');
    return { handle: handles[0]!, name }; // execute read exactly one handle
  }

  /**
   * TPM2_Certify of `object` by `signer` with `qualifyingData` as extraData, in the signer's own scheme.
   * Returns the TPMS_ATTEST bytes (what was signed) and the TPMT_SIGNATURE, both as the TPM made them.
   * `ecdsaSha256` names the scheme for a signer without one of its own (a key that also decrypts).
   */
  async certify(
    object: number,
    signer: number,
    qualifyingData: Buffer,
    options: { ecdsaSha256?: boolean } = {},
  ): Promise<{ attest: Buffer; signature: Buffer }> {
    const scheme = new TpmWriter();
    if (options.ecdsaSha256) scheme.u16(ALG.ecdsa).u16(ALG.sha256);
    else scheme.u16(ALG.null);
    const params = new TpmWriter().sized(qualifyingData).bytes(scheme.toBuffer()).toBuffer();
    const { params: r } = await this.execute('Certify', CC.certify, [object, signer], [PASSWORD, PASSWORD], params);
    const attest = r.sized();
    const signature = r.bytes(r.remaining);
    return { attest, signature };
  }

  /**
   * TPM2_Sign of a sha256 `digest` with ECDSA by a non-restricted key (a restricted one needs a hash ticket,
   * which is exactly what keeps an AK from signing a forged attestation). Returns the TPMT_SIGNATURE bytes.
   */
  async signDigest(key: number, digest: Buffer): Promise<Buffer> {
    const params = new TpmWriter()
      .sized(digest)
      .u16(ALG.ecdsa)
      .u16(ALG.sha256)
      .u16(ST.hashcheck)
      .u32(RH.null)
      .sized(Buffer.alloc(0))
      .toBuffer();
    const { params: r } = await this.execute('Sign', CC.sign, [key], [PASSWORD], params);
    return r.bytes(r.remaining);
  }

  /**
   * TPM2_ActivateCredential: the TPM decrypts a MakeCredential blob with the EK and releases the secret only
   * when the blob names `activateHandle`'s Name. The TCG default EK's authPolicy is PolicySecret(endorsement),
   * so the EK is authorized by a fresh policy session satisfied with the endorsement hierarchy's (empty)
   * password; that session is not continued, so the TPM flushes it after the command.
   */
  async activateCredential(activateHandle: number, ekHandle: number, credentialBlob: Buffer, encryptedSecret: Buffer): Promise<Buffer> {
    const session = await this.startPolicySession();
    try {
      await this.policySecret(RH.endorsement, session);
    } catch (error) {
      await this.flush(session).catch(() => undefined);
      throw error;
    }
    const params = new TpmWriter().sized(credentialBlob).sized(encryptedSecret).toBuffer();
    const policy: Authorization = { handle: session, attributes: 0x00, hmac: Buffer.alloc(0) };
    try {
      const { params: r } = await this.execute(
        'ActivateCredential',
        CC.activateCredential,
        [activateHandle, ekHandle],
        [PASSWORD, policy],
        params,
      );
      const secret = r.sized();
      r.end('TPM2_ActivateCredential');
      return secret;
    } catch (error) {
      // A failed command leaves the session loaded whatever its attributes said.
      await this.flush(session).catch(() => undefined);
      throw error;
    }
  }

  /** An unbound, unsalted sha256 policy session (TPM2_StartAuthSession). */
  async startPolicySession(): Promise<number> {
    const params = new TpmWriter()
      .sized(randomBytes(32)) // nonceCaller: at least 16 bytes (Part 3 §11.1)
      .sized(Buffer.alloc(0)) // encryptedSalt
      .u8(SE.policy)
      .u16(ALG.null) // symmetric
      .u16(ALG.sha256)
      .toBuffer();
    const { handles } = await this.execute('StartAuthSession', CC.startAuthSession, [RH.null, RH.null], [], params, 1);
    return handles[0]!; // execute read exactly one handle
  }

  /** TPM2_PolicySecret: proves knowledge of `authHandle`'s (empty) password into the policy session. */
  async policySecret(authHandle: number, session: number): Promise<void> {
    const params = new TpmWriter().sized(Buffer.alloc(0)).sized(Buffer.alloc(0)).sized(Buffer.alloc(0)).u32(0).toBuffer();
    await this.execute('PolicySecret', CC.policySecret, [authHandle, session], [PASSWORD], params);
  }

  async flush(handle: number): Promise<void> {
    await this.execute('FlushContext', CC.flushContext, [], [], new TpmWriter().u32(handle).toBuffer());
  }
}

/** TPM2B_SENSITIVE_CREATE with an empty userAuth and no data. */
function emptySensitiveCreate(): Buffer {
  return new TpmWriter().u16(4).u16(0).u16(0).toBuffer();
}

/** TPMT_TK_CREATION: tag, hierarchy, digest. */
function skipTicket(r: TpmReader): void {
  r.u16();
  r.u32();
  r.sized();
}
