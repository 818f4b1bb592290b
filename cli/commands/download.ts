import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { InvalidArgumentError } from 'commander';

/** `--format`: CSV is the one format the exports write. */
export function csvFormat(value: string): 'csv' {
  if (value !== 'csv') throw new InvalidArgumentError('csv is the only format');
  return 'csv';
}

/**
 * Streams a download to `file` (created, or replaced) or to standard output. When the download fails, the file is
 * removed rather than left holding part of an export.
 */
export async function writeDownload(file: string | undefined, download: (out: NodeJS.WritableStream) => Promise<void>): Promise<void> {
  if (!file) return download(process.stdout);
  const stream = createWriteStream(file);
  try {
    await download(stream);
    stream.end();
    await finished(stream);
  } catch (error) {
    stream.destroy();
    await rm(file, { force: true });
    throw error;
  }
}
