// `npm run test:e2e`: Playwright against a production build of the whole product, on a fresh database.
//
//   1. `next build` (skip with E2E_SKIP_BUILD=1 when .next is current), then the server compiled to
//      .build/server (always; about a second),
//   2. `.build/server/main.mjs` (what `npm start` runs) on a free port with a new temporary data directory, so the embedded PostgreSQL,
//      the root tenant, the default site and pool and the first admin are all created from scratch,
//   3. the first admin's first sign-in over HTTP (next-auth's csrf and credentials endpoints, as a browser
//      does), which must choose a new password (account.changePassword): the printed one is one-time,
//   4. `playwright test` (extra arguments are passed on, e.g. `-- --project api`) with E2E_BASE_URL,
//      E2E_ADMIN_EMAIL, E2E_ADMIN_PASSWORD (the new password), E2E_DATA_DIR (for `--local` commands) and
//      E2E_STATE_DIR (a private folder in the data directory where the `setup` project saves each role's
//      signed-in browser state, session cookies included: see e2e/support/roles.ts),
//   5. SIGTERM to the server (which stops its PostgreSQL), and the data directory removed with the saved
//      states in it, on every path out.
//
// The first admin's passwords are secrets: the new one is passed to Playwright in its environment only,
// and every line this script relays from the server or from Playwright has both masked.
// Only Node built-ins, like scripts/start.mjs. The server's start and stop are in scripts/e2e-server.mjs, the first
// admin's sign-in in scripts/e2e-first-admin.mjs, the masked output in scripts/e2e-output.mjs.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chooseAdminPassword } from './e2e-first-admin.mjs';
import { log, redact, relay, secrets } from './e2e-output.mjs';
import { freePort, startServer, stopServer } from './e2e-server.mjs';
import { usePinnedNode } from './runtime.mjs';

// The pinned Node.js (scripts/runtime.mjs), fetched once when this machine's is older.
await usePinnedNode();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
const CHROMIUM = process.env.E2E_CHROMIUM || '/usr/bin/chromium';

const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
// One JSON line per request would bury Playwright's report in thousands of lines; warnings and errors stay.
env.BETTER_COMPUTE_LOG_LEVEL ||= 'warn';
// An open console notices a removed operator or an ended session at its live stream's next recheck (30 s by
// default, which invitation.spec.ts would wait out): 5 s here.
env.BETTER_COMPUTE_STREAM_RECHECK_SECONDS ||= '5';
// The run must own its database and its URLs; settings from the caller's shell would point elsewhere.
delete env.DATABASE_URL;
delete env.NEXTAUTH_URL;
// e2e/ui/webhooks.spec.ts receives deliveries on 127.0.0.1, which production refuses.
env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = 'true';
// Every simulated machine of every spec joins from 127.0.0.1 (e2e/ui/join-requests-scale.spec.ts alone makes 200
// new requests in a minute): the per-address limits on new join requests and tokenless challenges would hold them back.
env.BETTER_COMPUTE_JOIN_REQUESTS_PER_ADDRESS ||= '100000';
env.BETTER_COMPUTE_JOIN_REQUESTS_PER_SITE ||= '100000';
env.BETTER_COMPUTE_CHALLENGES_PER_ADDRESS ||= '100000';

let server; // { child, exited, ready } from startServer, once spawned
let playwright;
let dataDir;
let cleaningUp;
let leftBehind = false;

/** Stops the server (SIGTERM, then SIGKILL to its whole process group) and removes the data directory. */
function cleanUp() {
  cleaningUp ??= (async () => {
    if (playwright && playwright.exitCode === null) playwright.kill('SIGTERM');
    if (server) leftBehind = await stopServer(server);
    if (dataDir) await rm(dataDir, { recursive: true, force: true }).catch((error) => log(`Could not remove ${dataDir}: ${error.message}`));
  })();
  return cleaningUp;
}

async function fail(message, code = 1) {
  log(message);
  await cleanUp();
  process.exit(code);
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => void fail(`Interrupted (${signal}).`, 130));
}
process.on('uncaughtException', (error) => void fail(`Unexpected error: ${redact(error?.stack ?? String(error))}`));
process.on('unhandledRejection', (error) => void fail(`Unexpected error: ${redact(error?.stack ?? String(error))}`));

function runPlaywright(baseUrl, admin, stateDir) {
  return new Promise((resolve) => {
    playwright = spawn(npx, ['playwright', 'test', ...process.argv.slice(2)], {
      env: {
        ...env,
        E2E_BASE_URL: baseUrl,
        E2E_ADMIN_EMAIL: admin.email,
        E2E_ADMIN_PASSWORD: admin.password,
        E2E_DATA_DIR: dataDir,
        E2E_STATE_DIR: stateDir,
        FORCE_COLOR: process.stdout.isTTY ? '1' : '0',
        // A failed test's error-context.md holds an accessibility snapshot of the page, input values included,
        // which can be the admin's password. Keep it, like traces, for debugging runs only.
        ...(process.env.E2E_TRACE === '1' ? {} : { PLAYWRIGHT_NO_COPY_PROMPT: '1' }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    relay(playwright.stdout, process.stdout, '');
    relay(playwright.stderr, process.stderr, '');
    playwright.once('error', (error) => {
      log(`Could not run Playwright: ${error.message}`);
      resolve(1);
    });
    playwright.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main() {
  if (process.env.E2E_SKIP_BUILD === '1') {
    if (!existsSync('.next/BUILD_ID')) return fail('E2E_SKIP_BUILD=1 but there is no build in .next; run without it once.');
    log('Skipping next build (E2E_SKIP_BUILD=1).');
  } else {
    log('Building the console (next build)…');
    const build = spawnSync(npx, ['next', 'build'], { stdio: 'inherit', env });
    if (build.status !== 0) return fail(`next build failed (exit ${build.status ?? build.signal}).`);
  }
  // The server the tests run is the compiled one `npm start` runs. It takes a second, so it is built every
  // time (also under E2E_SKIP_BUILD=1): a stale server bundle would test old code.
  log('Building the server (scripts/build-server.mjs)…');
  const serverBuild = spawnSync(process.execPath, ['scripts/build-server.mjs'], { stdio: 'inherit', env });
  if (serverBuild.status !== 0) return fail(`The server build failed (exit ${serverBuild.status ?? serverBuild.signal}).`);
  if (!existsSync(CHROMIUM))
    log(`Chromium is not at ${CHROMIUM}: the ui project will fail (apt-get install -y chromium, or set E2E_CHROMIUM).`);

  dataDir = await mkdtemp(path.join(os.tmpdir(), 'better-compute-e2e-'));
  // The pools page's install script pins the digests of this server's bcd build: build it (amd64, reused
  // from .cache/bcd while the agent's sources are unchanged) into the run's data directory.
  log('Building bcd (scripts/build-bcd.mjs --no-arm64)…');
  const bcdBuild = spawnSync(
    process.execPath,
    ['scripts/build-bcd.mjs', '--quiet', '--no-arm64', '--out', path.join(dataDir, 'downloads')],
    { stdio: 'inherit', env },
  );
  if (bcdBuild.status !== 0) return fail(`The bcd build failed (exit ${bcdBuild.status ?? bcdBuild.signal}).`);
  // Single sign-on against a real OpenID provider, which e2e/ui/sso.spec.ts starts on this port with this
  // client (the server fetches the provider's discovery document only when someone signs in with it).
  const oidcSecret = randomBytes(32).toString('base64url');
  secrets.add(oidcSecret);
  Object.assign(env, {
    BETTER_COMPUTE_OIDC_ISSUER: `http://127.0.0.1:${await freePort()}`,
    BETTER_COMPUTE_OIDC_CLIENT_ID: 'better-compute-e2e',
    BETTER_COMPUTE_OIDC_CLIENT_SECRET: oidcSecret,
    BETTER_COMPUTE_OIDC_NAME: 'Test IdP',
    BETTER_COMPUTE_OIDC_ROLE_MAP: JSON.stringify({ 'sso-operators': { tenant: 'sso-team', role: 'operator' } }),
  });
  // Sessions: heartbeats every 2 s and a grace of 3 s, so e2e/ui/sessions.spec.ts sees a stopped agent
  // disconnected within seconds rather than the default half minute.
  env.BETTER_COMPUTE_SESSION_HEARTBEAT_SECONDS ||= '2';
  env.BETTER_COMPUTE_SESSION_GRACE_SECONDS ||= '3';
  // The simulated agents open their first session at once (agents wait up to 5 s by default).
  env.BETTER_COMPUTE_SESSION_START_JITTER_SECONDS ||= '0';
  // The gateway on a free port too, so two runs on one machine (or a developer's `npm start`) do not collide.
  if (!env.BETTER_COMPUTE_GATEWAY_PORT) env.BETTER_COMPUTE_GATEWAY_PORT = String(await freePort());
  const port = await freePort();
  log(`Starting the server on port ${port} with a fresh data directory (${dataDir})…`);
  let started;
  try {
    server = startServer({ env, port, dataDir });
    started = await server.ready;
  } catch (error) {
    return fail(`The server did not start: ${redact(error.message)}`);
  }
  log(`Server ready at ${started.url}; signing the first admin in to choose a new password.`);
  let admin;
  try {
    admin = await chooseAdminPassword(started.url, started.admin);
  } catch (error) {
    return fail(redact(error.message));
  }
  // Session cookies: only the user running the tests may read them, and they go with the data directory.
  const stateDir = path.join(dataDir, 'e2e-signed-in');
  await mkdir(stateDir, { mode: 0o700 });
  log('Running Playwright.');
  let status = await runPlaywright(started.url, admin, stateDir);
  await cleanUp();
  // SIGTERM must stop the server and its embedded PostgreSQL cleanly: anything left running is a failure.
  if (leftBehind && status === 0) {
    log('The server left processes running after SIGTERM.');
    status = 1;
  }
  log(status === 0 ? 'End-to-end tests passed.' : `End-to-end tests failed (exit ${status}).`);
  process.exit(status);
}

await main();
