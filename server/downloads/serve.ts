import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { BASE_PATH } from '../config/config';
import { parseRange } from './range';

const DOWNLOAD = new RegExp(`^${BASE_PATH}/downloads/bcd/([^/]+)/(?:linux-([^/]+)|(release-manifest\\.json))$`);
const VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;
export const BCD_ARCHES = ['amd64', 'arm64'] as const;

/** Where built artifacts live: BETTER_COMPUTE_DOWNLOADS_DIR, else the build's dist/bcd under `projectRoot`. */
export function downloadsDir(projectRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  return env.BETTER_COMPUTE_DOWNLOADS_DIR ? path.resolve(env.BETTER_COMPUTE_DOWNLOADS_DIR) : path.join(projectRoot, 'dist/bcd');
}

// Hashing 100 MB takes a few hundred milliseconds: each file is hashed once per (inode, size, mtime).
const etags = new Map<string, Promise<string>>();
function strongEtag(file: string, key: string): Promise<string> {
  let etag = etags.get(key);
  if (!etag) {
    etag = (async () => {
      const hash = createHash('sha256');
      for await (const chunk of createReadStream(/* turbopackIgnore: true */ file)) hash.update(chunk as Buffer);
      return `"sha256-${hash.digest('hex')}"`;
    })();
    etag.catch(() => etags.delete(key));
    etags.set(key, etag);
  }
  return etag;
}

function notFound(res: http.ServerResponse, message: string) {
  const body = JSON.stringify({ code: 'NOT_FOUND', message });
  res.writeHead(404, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
}

/** True when `pathname` is a download path (then this function answers it). */
export const isDownloadPath = (pathname: string) => DOWNLOAD.test(pathname);

/**
 * Serves `GET|HEAD {basePath}/downloads/bcd/{version}/linux-{arch}` from `dir/{version}/linux-{arch}` with
 * Content-Length, a strong ETag (the SHA-256 of the bytes, the digest the install script checks),
 * If-None-Match, and one byte range (If-Range honoured). An unknown version or arch is 404: the path's parts
 * are matched against fixed shapes before they touch the file system, so no path escapes `dir`.
 * `{version}/release-manifest.json` (written by `build:bcd --release-key`) is served the same way, as JSON.
 */
export async function serveDownload(req: http.IncomingMessage, res: http.ServerResponse, pathname: string, dir: string): Promise<void> {
  const [, version = '', arch = '', manifest] = DOWNLOAD.exec(pathname) ?? [];
  if (!VERSION.test(version) || !(manifest || (BCD_ARCHES as readonly string[]).includes(arch)))
    return notFound(res, 'No such bcd download');
  const name = manifest ?? `linux-${arch}`;
  // Turbopack (this module is also bundled into the tRPC route, for downloadsDir) would trace these file
  // calls and warn that it cannot bound their runtime paths: they are never part of the build.
  const file = path.join(dir, version, name);
  const info = await stat(/* turbopackIgnore: true */ file).catch(() => null);
  if (!info?.isFile()) return notFound(res, `bcd ${version} has no ${name}`);
  const etag = await strongEtag(file, `${file}:${info.ino}:${info.size}:${info.mtimeMs}`);
  const headers: http.OutgoingHttpHeaders = {
    'content-type': manifest ? 'application/json' : 'application/octet-stream',
    'content-disposition': `attachment; filename="${manifest ?? 'bcd'}"`,
    'accept-ranges': 'bytes',
    etag,
    'last-modified': info.mtime.toUTCString(),
    // A version directory can be rebuilt in development: caches revalidate against the ETag.
    'cache-control': 'no-cache',
  };
  if (req.headers['if-none-match']?.split(/\s*,\s*/).includes(etag)) {
    res.writeHead(304, headers).end();
    return;
  }
  const ifRange = req.headers['if-range'];
  const range = ifRange && ifRange !== etag ? null : parseRange(req.headers.range, info.size);
  if (range === 'unsatisfiable') {
    res.writeHead(416, { ...headers, 'content-range': `bytes */${info.size}`, 'content-length': 0 }).end();
    return;
  }
  const { start, end } = range ?? { start: 0, end: info.size - 1 };
  res.writeHead(range ? 206 : 200, {
    ...headers,
    'content-length': end - start + 1,
    ...(range ? { 'content-range': `bytes ${start}-${end}/${info.size}` } : {}),
  });
  if (req.method === 'HEAD' || info.size === 0) {
    res.end();
    return;
  }
  await pipeline(createReadStream(/* turbopackIgnore: true */ file, { start, end }), res).catch(() => res.destroy());
}
