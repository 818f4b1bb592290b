import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkTools, TOOLS } from './check-tools.mjs';

// Every case runs against a PATH of fake executables in a temporary directory, so the machine's packages are
// never looked at or touched: apt-get is either absent or a fake that records its arguments.
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeMachine(missing: string[], options: { aptGet?: boolean } = {}) {
  const bin = mkdtempSync(path.join(tmpdir(), 'bc-tools-'));
  dirs.push(bin);
  const fake = (name: string, text = '#!/bin/sh\nexit 0\n') => {
    writeFileSync(path.join(bin, name), text);
    chmodSync(path.join(bin, name), 0o755);
  };
  for (const tool of TOOLS) if (!missing.includes(tool.name)) fake(tool.name);
  const log = path.join(bin, 'apt-get.log');
  // The fake apt-get records each call; `install` "installs" by creating the fakes of the missing tools.
  if (options.aptGet) {
    const creates = missing.map((name) => `printf '#!/bin/sh\\n' > "${bin}/${name}"; /bin/chmod 755 "${bin}/${name}"`).join('\n');
    fake('apt-get', `#!/bin/sh\necho "DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*" >> "${log}"\nif [ "$1" = install ]; then\n${creates}\nfi\n`);
  }
  const env = { ...process.env, PATH: bin, E2E_CHROMIUM: '' };
  return { bin, env, chromium: path.join(bin, 'chromium'), log, calls: () => readFileSync(log, 'utf8').trim().split('\n') };
}

function check(machine: ReturnType<typeof fakeMachine>, uid: number, run?: (command: string, args: string[]) => number) {
  const said: string[] = [];
  const failed: string[] = [];
  const calls: string[][] = [];
  const code = checkTools({
    env: machine.env,
    uid,
    chromium: machine.chromium,
    run: run ? (command, args) => (calls.push([command, ...args]), run(command, args)) : undefined,
    say: (l) => said.push(l),
    fail: (l) => failed.push(l),
  });
  return { code, said, failed, calls };
}

describe('the system tool check before npm test', () => {
  it('passes quietly and runs nothing when every tool is there', () => {
    const result = check(fakeMachine([], { aptGet: true }), 0, () => 1);
    expect(result).toEqual({ code: 0, said: [], failed: [], calls: [] });
  });

  it('not root: stops with one message naming the missing tools and the exact command, running nothing', () => {
    const result = check(fakeMachine(['shellcheck', 'swtpm_setup', 'chromium'], { aptGet: true }), 1000, () => 0);
    expect(result.code).toBe(1);
    expect(result.calls).toEqual([]);
    expect(result.said).toEqual([]);
    expect(result.failed).toEqual([
      'The tests need system tools that are missing: chromium (the Playwright UI tests), shellcheck (the generated install script), ' +
        'swtpm_setup (the TPM tests). Install them with:\n  sudo apt-get update && sudo apt-get install -y chromium shellcheck swtpm-tools',
    ]);
  });

  it('root without apt-get: the same single message, without sudo', () => {
    const result = check(fakeMachine(['curl']), 0);
    expect(result.code).toBe(1);
    expect(result.failed).toEqual([
      'The tests need system tools that are missing: curl (mutual TLS through the gateway). Install them with:\n' +
        '  apt-get update && apt-get install -y curl',
    ]);
  });

  it('root with apt-get: one update and one install of all missing packages, saying what it installs', () => {
    const machine = fakeMachine(['shellcheck', 'swtpm', 'swtpm_setup']);
    writeFileSync(path.join(machine.bin, 'apt-get'), '');
    chmodSync(path.join(machine.bin, 'apt-get'), 0o755);
    const result = check(machine, 0, (_command, args) => {
      if (args[0] === 'install')
        for (const name of ['shellcheck', 'swtpm', 'swtpm_setup']) writeFileSync(path.join(machine.bin, name), '', { mode: 0o755 });
      return 0;
    });
    expect(result.calls).toEqual([
      [path.join(machine.bin, 'apt-get'), 'update', '-qq'],
      [path.join(machine.bin, 'apt-get'), 'install', '-y', '-qq', 'shellcheck', 'swtpm', 'swtpm-tools'],
    ]);
    expect(result.said).toEqual(['Installing the system tools the tests need (apt-get): shellcheck swtpm swtpm-tools']);
    expect(result).toMatchObject({ code: 0, failed: [] });
  });

  it('installs Go as golang-go, the package that puts go on the PATH', () => {
    const machine = fakeMachine(['go'], { aptGet: true });
    expect(check(machine, 1000).failed).toEqual([
      'The tests need system tools that are missing: go (the independent Go session client). Install them with:\n' +
        '  sudo apt-get update && sudo apt-get install -y golang-go',
    ]);
    const result = check(machine, 0, (_command, args) => {
      if (args[0] === 'install') writeFileSync(path.join(machine.bin, 'go'), '', { mode: 0o755 });
      return 0;
    });
    expect(result.calls.map((call) => call.slice(1))).toEqual([
      ['update', '-qq'],
      ['install', '-y', '-qq', 'golang-go'],
    ]);
    expect(result).toMatchObject({ code: 0, failed: [], said: ['Installing the system tools the tests need (apt-get): golang-go'] });
  });

  it('root with apt-get that fails: stops after the update, naming the command', () => {
    const machine = fakeMachine(['openssl'], { aptGet: true });
    const result = check(machine, 0, () => 100);
    expect(result.calls).toHaveLength(1);
    expect(result.code).toBe(1);
    expect(result.failed).toEqual([
      "Installing openssl failed (see apt-get's output above). Run:\n  apt-get update && apt-get install -y openssl",
    ]);
  });

  it('refuses an E2E_CHROMIUM that is not there rather than installing a browser it would not use', () => {
    const machine = fakeMachine([], { aptGet: true });
    const result = checkTools({
      env: { ...machine.env, E2E_CHROMIUM: path.join(machine.bin, 'nope') },
      uid: 0,
      chromium: machine.chromium,
      run: () => 0,
      say: () => {},
      fail: () => {},
    });
    expect(result).toBe(1);
    expect(checkTools({ env: { ...machine.env, E2E_CHROMIUM: machine.chromium }, uid: 0, chromium: '/nonexistent', fail: () => {} })).toBe(
      0,
    );
  });

  // The script as npm runs it, with the real apt-get runner, against a fake apt-get on the PATH.
  it.runIf(process.getuid?.() === 0)('as a process: installs through apt-get quietly, then exits 0', () => {
    const machine = fakeMachine(['shellcheck', 'curl'], { aptGet: true });
    const result = spawnSync(process.execPath, ['scripts/check-tools.mjs'], {
      env: { ...machine.env, E2E_CHROMIUM: machine.chromium },
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('Installing the system tools the tests need (apt-get): shellcheck curl\n');
    expect(result.status).toBe(0);
    expect(machine.calls()).toEqual([
      'DEBIAN_FRONTEND=noninteractive update -qq',
      'DEBIAN_FRONTEND=noninteractive install -y -qq shellcheck curl',
    ]);
  });

  it('as a process: a missing tool without apt-get stops npm test before anything else runs', () => {
    const machine = fakeMachine(['shellcheck']);
    const sh = spawnSync('/bin/sh', ['-c', `"${process.execPath}" scripts/check-tools.mjs && echo the suite ran`], {
      env: { ...machine.env, E2E_CHROMIUM: machine.chromium },
      encoding: 'utf8',
    });
    expect(sh.status).toBe(1);
    expect(sh.stdout).toBe('');
    expect(sh.stderr).toMatch(
      /^The tests need system tools that are missing: shellcheck \(the generated install script\)\. Install them with:\n {2}(sudo )?apt-get update && (sudo )?apt-get install -y shellcheck\n$/,
    );
  });
});
