import { PASSWORD, TpmError, type TpmClient } from './client';
import { CC, PT, RC } from '../../protocol/tpm/constants';
import { TpmReader, TpmWriter } from '../../protocol/tpm/marshal';

/** The size of an NV index's data (TPM2_NV_ReadPublic), or undefined when the index is not defined. */
export async function nvDataSize(tpm: TpmClient, index: number): Promise<number | undefined> {
  try {
    const { params: r } = await tpm.execute('NV_ReadPublic', CC.nvReadPublic, [index], [], Buffer.alloc(0));
    const nvPublic = new TpmReader(r.sized());
    nvPublic.u32(); // nvIndex
    nvPublic.u16(); // nameAlg
    nvPublic.u32(); // attributes
    nvPublic.sized(); // authPolicy
    return nvPublic.u16();
  } catch (error) {
    if (error instanceof TpmError && error.baseCode === RC.handleBase) return undefined;
    throw error;
  }
}

/**
 * Reads a whole NV index with its own (empty) authorization, as EK certificate indices allow, in chunks of
 * the TPM's TPM_PT_NV_BUFFER_MAX (a TPM refuses a larger TPM2_NV_Read).
 */
export async function nvReadAll(tpm: TpmClient, index: number, size: number): Promise<Buffer> {
  const chunk = (await tpm.getProperty(PT.nvBufferMax).catch(() => undefined)) ?? 512;
  const parts: Buffer[] = [];
  for (let offset = 0; offset < size; offset += chunk) {
    const params = new TpmWriter()
      .u16(Math.min(chunk, size - offset))
      .u16(offset)
      .toBuffer();
    const { params: r } = await tpm.execute('NV_Read', CC.nvRead, [index, index], [PASSWORD], params);
    parts.push(r.sized());
  }
  return Buffer.concat(parts);
}
