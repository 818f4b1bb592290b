/**
 * The console's first useful content (bench:console for every page, bench:join-requests for the queue's first
 * row): the production server (`.build/server/main.mjs`, Next's build in `.next`) on the
 * benchmark's database, Debian's Chromium signed in as an admin of the benchmark's tenant, and the time from
 * the navigation to a page to its first useful content on screen (the queue's first request row, a list's
 * first row), over several navigations.
 *
 * The time is read in the page: `performance.now()` (milliseconds since the navigation started, the document's
 * time origin) at the first animation frame that shows the content with a size. The wall time from Playwright's
 * `goto` to that moment is reported beside it. Each navigation is a full page load (a new document), as when
 * an operator opens a page from a link or reloads it; a warm-up navigation comes first (Next compiles
 * nothing at run time, but the server's caches and Chromium's disk cache start cold).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import { percentile } from '../agent/sim/percentiles';
import type { Db } from '../server/db/client';
import { createOperator } from '../server/operators/operators';

const CHROMIUM = process.env.E2E_CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];
const RUNNING_LINE = /^Better Compute is running: console at (http:\/\/\S+)/;
const ROW = 'tbody tr[id^="request-row-"]';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** `.next` is reused when it holds a build; otherwise `npm run build` makes one. The server bundle is always rebuilt (a second). */
function ensureBuild(root: string, log: (line: string) => void) {
  if (!existsSync(path.join(root, '.next', 'BUILD_ID'))) {
    log('console: no build in .next; running npm run build…');
    const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
    if (build.status !== 0) throw new Error(`npm run build failed (exit ${build.status ?? build.signal})`);
    return;
  }
  const server = spawnSync(process.execPath, ['scripts/build-server.mjs'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (server.status !== 0) throw new Error(`scripts/build-server.mjs failed (exit ${server.status ?? server.signal})`);
}

/** Starts the production server on `databaseUrl`; resolves with its URL once it says it is running. */
async function startServer(root: string, databaseUrl: string, dataDir: string, log: (line: string) => void) {
  const port = await freePort();
  const child = spawn(process.execPath, ['.build/server/main.mjs'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      NEXT_TELEMETRY_DISABLED: '1',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      NEXTAUTH_URL: `http://localhost:${port}`,
      BETTER_COMPUTE_DATA_DIR: dataDir,
      BETTER_COMPUTE_DOWNLOADS_DIR: path.join(dataDir, 'downloads'),
      BETTER_COMPUTE_GATEWAY_PORT: String(await freePort()),
      BETTER_COMPUTE_WORKERS: '1',
      BETTER_COMPUTE_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<string>((done) => child.once('exit', (code, signal) => done(String(code ?? signal))));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start within 180 s')), 180_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const running = RUNNING_LINE.exec(line);
      if (running) {
        clearTimeout(timer);
        resolve(running[1]!.replace(/\/$/, ''));
      }
    });
    createInterface({ input: child.stderr! }).on('line', (line) => log(`  [server] ${line}`));
    void exited.then((code) => reject(new Error(`the server exited (${code}) before it was ready`)));
  });
  return { child, url, exited };
}

async function stopServer(child: ChildProcess, exited: Promise<string>) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const stopped = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 30_000))]);
  if (stopped === 'timeout') process.kill(-child.pid!, 'SIGKILL');
}

interface FirstContentResult {
  navigations: number;
  /** What the page said at the warm-up (the queue's "N pending"), when the probe names an element to read. */
  pending?: string;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  wallP50Ms: number;
  wallP99Ms: number;
  /** Where the time goes (medians): the HTML received, and DOMContentLoaded (scripts run), since the navigation. */
  documentP50Ms: number;
  domContentLoadedP50Ms: number;
}

/** One console page to load: its address (path and query) and the element that is its first useful content. */
export interface ConsolePageProbe {
  name: string;
  path: string;
  /** A CSS selector; the first matching element with a size on screen counts as the page's first useful content. */
  selector: string;
  /** `data-testid` of an element whose text is reported from the warm-up load. */
  noteTestId?: string;
}

/**
 * Measures each page's first useful content for `navigations` page loads (after one warm-up each), signed in
 * as a new admin of `tenantId`: the production server on `databaseUrl`, Debian's Chromium at 1440×900.
 */
export async function measureConsolePages(options: {
  root: string;
  db: Db;
  databaseUrl: string;
  tenantId: string;
  navigations: number;
  pages: ConsolePageProbe[];
  log: (line: string) => void;
}): Promise<Record<string, FirstContentResult>> {
  const { root, db, log } = options;
  ensureBuild(root, log);
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not at ${CHROMIUM} (apt-get install -y chromium, or set E2E_CHROMIUM)`);
  const email = `bench-${randomBytes(4).toString('hex')}@bench.example.com`;
  const password = randomBytes(24).toString('base64url');
  await createOperator(db, { email, name: 'Bench admin', password, tenantId: options.tenantId, role: 'admin' });
  const dataDir = await mkdtemp(path.join(tmpdir(), 'bc-bench-console-'));
  const server = await startServer(root, options.databaseUrl, dataDir, log);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    // From the document's start, before any script of the page or of Playwright: the first animation frame at
    // which each probe's element is in the document with a size (Playwright's own polling starts later, by as
    // much as its driver waits for a core on a busy machine).
    await page.addInitScript(
      (selectors: string[]) => {
        const seen: Record<string, number> = {};
        (window as unknown as { __firstSeen: Record<string, number> }).__firstSeen = seen;
        let scheduled = false;
        const look = () => {
          scheduled = false;
          for (const selector of selectors) {
            const element = seen[selector] === undefined ? document.querySelector(selector) : null;
            if (element && element.getBoundingClientRect().height > 0) seen[selector] = performance.now();
          }
        };
        new MutationObserver(() => {
          if (scheduled) return;
          scheduled = true;
          requestAnimationFrame(look);
        }).observe(document, { childList: true, subtree: true });
      },
      [...new Set(options.pages.map((probe) => probe.selector))],
    );
    await page.goto(`${server.url}/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/', { timeout: 60_000 });
    const results: Record<string, FirstContentResult> = {};
    for (const probe of options.pages) {
      const address = `${server.url}${probe.path}`;
      const inPage: number[] = [];
      const wall: number[] = [];
      const documents: number[] = [];
      const domLoaded: number[] = [];
      let note: string | undefined;
      for (let i = 0; i <= options.navigations; i++) {
        const started = performance.now();
        await page.goto(address, { waitUntil: 'commit' });
        const shown = await page.waitForFunction(
          (selector) => {
            const element = document.querySelector(selector);
            if (!element || element.getBoundingClientRect().height === 0) return false;
            const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
            const seenAt = (window as unknown as { __firstSeen?: Record<string, number> }).__firstSeen?.[selector];
            return { at: seenAt ?? performance.now(), document: nav?.responseEnd ?? 0, loaded: nav?.domContentLoadedEventEnd ?? 0 };
          },
          probe.selector,
          { polling: 'raf', timeout: 60_000 },
        );
        const { at, document: documentAt, loaded } = (await shown.jsonValue()) as { at: number; document: number; loaded: number };
        const ended = performance.now();
        if (i === 0) {
          if (probe.noteTestId) note = (await page.getByTestId(probe.noteTestId).textContent({ timeout: 60_000 })) ?? '';
          continue; // the warm-up
        }
        inPage.push(at);
        documents.push(documentAt);
        domLoaded.push(loaded);
        wall.push(ended - started);
      }
      const round = (n: number) => Math.round(n * 10) / 10;
      results[probe.name] = {
        navigations: options.navigations,
        ...(note === undefined ? {} : { pending: note }),
        p50Ms: round(percentile(inPage, 50)),
        p99Ms: round(percentile(inPage, 99)),
        maxMs: round(Math.max(...inPage)),
        wallP50Ms: round(percentile(wall, 50)),
        wallP99Ms: round(percentile(wall, 99)),
        documentP50Ms: round(percentile(documents, 50)),
        domContentLoadedP50Ms: round(percentile(domLoaded, 50)),
      };
      log(`  console ${probe.name}: ${JSON.stringify(results[probe.name])}`);
    }
    return results;
  } finally {
    await browser.close();
    await stopServer(server.child, server.exited);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * Measures the first row of /join-requests for `navigations` page loads (after one warm-up), signed in as a
 * new admin of `tenantId`. `search` adds the console's search (`q=`) to the address.
 */
export function measureConsoleFirstRow(options: {
  root: string;
  db: Db;
  databaseUrl: string;
  tenantId: string;
  poolId: string;
  navigations: number;
  searches?: string[];
  log: (line: string) => void;
}): Promise<Record<string, FirstContentResult>> {
  const pages = [undefined, ...(options.searches ?? [])].map((search) => ({
    name: search ? `search ${search}` : 'no search',
    path: `/join-requests?${new URLSearchParams({ pool: options.poolId, tenant: options.tenantId, ...(search ? { q: search } : {}) })}`,
    selector: ROW,
    noteTestId: 'queue-count',
  }));
  return measureConsolePages({ ...options, pages });
}
